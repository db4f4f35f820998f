//! Request targets: path segments, path parameters and query pairs, each percent-decoded, scrubbed and
//! written back encoded; what is left untouched keeps its bytes.

use super::{Counter, Scrubber};
use crate::tape::private_values::{classify, percent_decode, percent_encode};

impl Scrubber {
    /// The target with private path segments and query values replaced.
    pub(super) fn target(&mut self, target: &str) -> String {
        let (path, query) = target.split_once('?').map_or((target, None), |(p, q)| (p, Some(q)));
        let mut out = String::with_capacity(target.len());
        for (i, segment) in path.split('/').enumerate() {
            if i > 0 {
                out.push('/');
            }
            // Path parameters (`/boards/1;jsessionid=…`) are pairs like a query's.
            if let Some((head, params)) = segment.split_once(';') {
                out.push_str(&self.path_segment(head).unwrap_or_else(|| head.to_owned()));
                out.push(';');
                out.push_str(&self.pairs(&params.replace(';', "&"), Counter::Query).replace('&', ";"));
                continue;
            }
            out.push_str(&self.path_segment(segment).unwrap_or_else(|| segment.to_owned()));
        }
        if let Some(query) = query {
            out.push('?');
            out.push_str(&self.pairs(query, Counter::Query));
        }
        out
    }

    /// `target` scrubbed as a request's is, without counting it: what a generated scenario names a step by
    /// (its route), beside the path and query it scrubbed and counted already.
    #[must_use]
    pub fn target_uncounted(&mut self, target: &str) -> String {
        let counts = self.counts;
        let scrubbed = self.target(target);
        self.counts = counts;
        scrubbed
    }

    /// A message about a line that is not a request, with whatever it quotes scrubbed as the request would
    /// have been (as a value, and each path in it as a target, segment by segment): the report is printed
    /// and pasted into tickets. The counts stay those of requests.
    #[must_use]
    pub fn message(&mut self, message: &str) -> String {
        let counts = self.counts;
        // The whole first (a card number written in groups spans words), then each path segment by segment.
        let whole = self.value(None, message).unwrap_or_else(|| message.to_owned());
        let mut out = String::with_capacity(whole.len());
        // Words between spaces and backticks, the separators kept as they are.
        let mut rest = whole.as_str();
        loop {
            let (word, tail) = rest.split_at(rest.find([' ', '`']).unwrap_or(rest.len()));
            let scrubbed = if word.starts_with('/') { self.target(word) } else { word.to_owned() };
            out.push_str(&without_clipped_value(&scrubbed));
            let Some(separator) = tail.chars().next() else { break };
            out.push(separator);
            rest = &tail[1..];
        }
        self.counts = counts;
        out
    }

    /// A path segment as recorded (percent-encoded), scrubbed, if anything in it is private.
    pub fn path_segment(&mut self, segment: &str) -> Option<String> {
        let scrubbed = if segment.contains('%') {
            self.private(&percent_decode(&segment.replace('+', "%2B")))?
        } else {
            self.private(segment)?
        };
        self.counts.values += 1;
        Some(path_encode(&scrubbed))
    }

    /// `a=1&b=2` (a query or a form body) with secret values replaced; untouched pairs stay byte for byte.
    pub fn pairs(&mut self, text: &str, counter: Counter) -> String {
        let mut out = String::with_capacity(text.len());
        for (i, pair) in text.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            let Some((name, value)) = pair.split_once('=') else {
                // A bare value (`?jane%40example.com`) is checked by its look alone.
                match self.pair_value(None, pair, counter) {
                    Some(scrubbed) => out.push_str(&percent_encode(&scrubbed)),
                    None => out.push_str(pair),
                }
                continue;
            };
            out.push_str(name);
            out.push('=');
            match self.pair_value(Some(&percent_decode(name)), value, counter) {
                Some(scrubbed) => out.push_str(&percent_encode(&scrubbed)),
                None => out.push_str(value),
            }
        }
        out
    }

    /// The decoded value of one pair (as recorded, percent-encoded) called `name`, scrubbed, if it must be.
    /// A `+` is a space in a query, but a key of base64 written unencoded keeps it: the value is checked as a
    /// whole both ways.
    pub fn pair_value(&mut self, name: Option<&str>, raw: &str, counter: Counter) -> Option<String> {
        let decoded = percent_decode(raw);
        if name.is_some_and(|n| self.rules.is_secret(n)) {
            if raw.is_empty() {
                return None;
            }
            self.count(counter);
            return Some(self.secret(&decoded));
        }
        let literal_plus = raw.contains('+').then(|| percent_decode(&raw.replace('+', "%2B")));
        let whole = literal_plus.and_then(|v| classify(&v).map(|kind| self.placeholders.of(kind, &v)));
        whole.or_else(|| self.private(&decoded)).inspect(|_| self.counts.values += 1)
    }

    fn count(&mut self, counter: Counter) {
        match counter {
            Counter::Query => self.counts.query += 1,
            Counter::Field => self.counts.fields += 1,
        }
    }
}

/// A scrubbed path segment written back into a path: what a path cannot hold as it is, percent-encoded.
fn path_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,=:@".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A word a message cut short (`…/alice.smith@corporat…`) without the value the cut left unrecognisable: what
/// it held of an address or a number could be private, and no longer reads as one to be replaced.
fn without_clipped_value(word: &str) -> std::borrow::Cow<'_, str> {
    let Some(kept) = word.strip_suffix('…') else { return std::borrow::Cow::Borrowed(word) };
    let start = kept
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_alphanumeric() || "@._%+-".contains(*c))
        .last()
        .map_or(kept.len(), |(i, _)| i);
    let tail = &kept[start..];
    let private_looking = tail.contains('@') || tail.bytes().filter(u8::is_ascii_digit).count() >= 4;
    if private_looking {
        std::borrow::Cow::Owned(format!("{}…", &kept[..start]))
    } else {
        std::borrow::Cow::Borrowed(word)
    }
}
