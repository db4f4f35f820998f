//! The HAR document read as a stream. serde_json walks it with these visitors, which skip whatever is not
//! wanted as [`IgnoredAny`] (nothing is built of it) and take `log.pages` and `log.entries` one item at a
//! time: the [`Scanner`](super::scan::Scanner) keeps each item's text as it goes by, and the item is read on
//! its own, so an item that is not an entry is never built at all, and one too long is never held whole.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::entry::read_entry;
use super::scan::{Element, Scan};
use super::{Each, Page, PageTitles};

/// The longest page (its id and title) kept; a longer one is named by nothing but its entries' `pageref`.
const MAX_PAGE_BYTES: usize = 64 * 1024;

/// The most pages whose titles are kept: a browser session visits tens.
const MAX_PAGES: usize = 1000;

/// One reading of a HAR: where its entries go, and what it learnt on the way.
pub(super) struct Reading<'a> {
    pub scan: Rc<RefCell<Scan>>,
    pub each: &'a mut Each<'a>,
    /// The longest entry read ([`MAX_ENTRY_BYTES`](super::MAX_ENTRY_BYTES) but in tests).
    pub entry_cap: usize,
    /// Entries handed to `each` so far.
    pub entries: u64,
    pub pages: PageTitles,
    /// Why `each` stopped the reading, if it did.
    pub stopped: Option<String>,
}

/// The fields the reader looks for, in the document and in its `log`.
#[derive(Deserialize, PartialEq, Eq)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Log,
    Pages,
    Entries,
    #[serde(other)]
    Other,
}

/// The document: an object with a `log`.
pub(super) struct Document<'r, 'a>(pub &'r mut Reading<'a>);
/// `log`: an object with `pages` and `entries`.
struct Log<'r, 'a>(&'r mut Reading<'a>);
/// `log.pages`.
struct Pages<'r, 'a>(&'r mut Reading<'a>);
/// `log.entries`.
struct Entries<'r, 'a>(&'r mut Reading<'a>);

impl<'de> DeserializeSeed<'de> for Document<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Document<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a HAR document, an object with a `log`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut log = false;
        while let Some(field) = map.next_key::<Field>()? {
            if field == Field::Log {
                map.next_value_seed(Log(&mut *self.0))?;
                log = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if log { Ok(()) } else { Err(de::Error::missing_field("log")) }
    }
}

impl<'de> DeserializeSeed<'de> for Log<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Log<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a HAR log, an object with `entries`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Pages => map.next_value_seed(Pages(&mut *self.0))?,
                Field::Entries => map.next_value_seed(Entries(&mut *self.0))?,
                Field::Log | Field::Other => map.next_value::<IgnoredAny>().map(drop)?,
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Pages<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Pages<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of pages")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        // A page that cannot be read only loses its title: entries still name it by its id.
        while let Some(element) = next_item(&self.0.scan, &mut seq, MAX_PAGE_BYTES)? {
            if let Element::Object(text) = element
                && self.0.pages.0.len() < MAX_PAGES
                && let Ok(page) = serde_json::from_slice::<Page>(&text)
            {
                self.0.pages.0.push(page);
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Entries<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of entries")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let reading = self.0;
        while let Some(element) = next_item(&reading.scan, &mut seq, reading.entry_cap)? {
            reading.entries += 1;
            if let Err(why) = (reading.each)(read_entry(reading.entries, element, reading.entry_cap)) {
                reading.stopped = Some(why);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// The next item of `seq`, skipped by serde_json while the scanner keeps up to `cap` bytes of it.
fn next_item<'de, A: SeqAccess<'de>>(
    scan: &RefCell<Scan>,
    seq: &mut A,
    cap: usize,
) -> Result<Option<Element>, A::Error> {
    scan.borrow_mut().open(cap);
    let item = seq.next_element::<IgnoredAny>()?;
    let element = scan.borrow_mut().close();
    Ok(item.map(|IgnoredAny| element))
}
