#!/usr/bin/env python3
"""A day of a boards API's nginx access log, in the `combined` format, for `degrade tape import` to read.

Usage: python3 ci/gen-access-log.py N [SEED] > access.log

Writes N lines, the same ones for the same N and SEED (default 1): 12 routes under /api in a Zipf-like mix (the
two hottest take half the traffic, two rare ones 0.05 % each), board, card and user ids drawn with a Zipf skew
from ranges of millions (so a long log names hundreds of thousands of distinct ids and a few of them very often),
query strings on some routes, 5 % static assets, GET and POST (a POST's body is not in a combined log), every
status 200 (so a replay of the whole log against a server that answers 200 everywhere succeeds), and timestamps
that never go back, spread over the 24 hours of 2026-11-30 UTC. Two million lines take a few seconds.
"""
import random
import sys
from datetime import datetime, timedelta, timezone

CHUNK = 50_000
START = datetime(2026, 11, 30, tzinfo=timezone.utc)
DAY = 86_400
BOARDS, CARDS, USERS = 5_000_000, 40_000_000, 2_000_000
WORDS = ("roadmap", "budget", "q4", "hiring", "launch", "bug", "design", "retro", "okr", "infra", "sales", "onboarding",
         "migration", "review", "incident", "pricing")
STATIC = (("/static/app.3f9a1c.js", 48213), ("/static/vendor.8e1b2f.js", 181455), ("/static/site.css", 7731),
          ("/favicon.ico", 1150), ("/img/logo.png", 15022), ("/static/fonts/inter.woff2", 31420),
          ("/static/app.3f9a1c.js.map", 152306))
AGENTS = ('"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"',
          '"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15"',
          '"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"',
          '"okhttp/4.12.0"', '"boards-ios/5.2.1 CFNetwork/1498.700.2 Darwin/23.6.0"')
REFERERS = ('"-"', '"https://boards.example.com/"', '"https://boards.example.com/boards"')


def zipf(u, n):
    """An id in 1..n with P(k) roughly proportional to 1/k, from a uniform u in [0, 1)."""
    return int(n ** u)


def uuid_of(k):
    """A fixed, random-looking version-4 UUID for user k."""
    h = (k * 0x9E3779B97F4A7C15F39CC0605CEDC835) & ((1 << 128) - 1)
    s = f"{h:032x}"
    return f"{s[:8]}-{s[8:12]}-4{s[13:16]}-a{s[17:20]}-{s[20:]}"


# (weight, method, function of two uniforms giving (target, bytes)). Weights add up to 1; static assets are 5 %.
ROUTES = (
    (0.290, "GET", lambda u, v: (f"/api/boards/{zipf(u, BOARDS)}", 700 + int(v * 400))),
    (0.200, "GET", lambda u, v: (f"/api/boards/{zipf(u, BOARDS)}/cards" + ("?page=2" if v < 0.1 else ""),
                                 2000 + int(v * 9000))),
    (0.120, "GET", lambda u, v: (f"/api/boards?page={zipf(u, 60)}", 4800 + int(v * 400))),
    (0.090, "GET", lambda u, v: (f"/api/cards/{zipf(u, CARDS)}", 300 + int(v * 900))),
    (0.070, "GET", lambda u, v: (f"/api/users/{uuid_of(zipf(u, USERS))}" + ("?fields=profile" if v < 0.2 else ""),
                                 350 + int(v * 60))),
    (0.050, "GET", lambda u, v: (f"/api/search?q={WORDS[int(u * len(WORDS))]}&limit={20 if v < 0.8 else 50}",
                                 1200 + int(v * 3000))),
    (0.040, "GET", lambda u, v: (f"/api/notifications?since={1764460800 + int(u * DAY)}", 90 + int(v * 2000))),
    (0.040, "POST", lambda u, v: (f"/api/boards/{zipf(u, BOARDS)}/cards", 180 + int(v * 40))),
    (0.030, "POST", lambda u, v: (f"/api/cards/{zipf(u, CARDS)}/comments", 140 + int(v * 40))),
    (0.019, "POST", lambda u, v: ("/api/boards", 110 + int(v * 20))),
    (0.0005, "GET", lambda u, v: (f"/api/exports/{uuid_of(int(u * 2**40)).replace('-', '')}", 20480 + int(v * 100000))),
    (0.0005, "GET", lambda u, v: (f"/api/reports/{(START - timedelta(days=int(u * 90))).date()}", 1400 + int(v * 200))),
    (0.050, "GET", lambda u, v: STATIC[int(u * u * len(STATIC))]),
)


def main():
    if len(sys.argv) not in (2, 3) or not sys.argv[1].isdigit():
        sys.exit("usage: python3 ci/gen-access-log.py N [SEED] > access.log")
    n = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) == 3 else 1)
    cum, total = [], 0.0
    for weight, _, _ in ROUTES:
        total += weight
        cum.append(total)
    assert abs(total - 1.0) < 1e-9, total
    clients = [f"{net}.{host}" for net in ("203.0.113", "198.51.100", "192.0.2") for host in range(1, 255)]
    clock, clock_second = "", -1
    out = sys.stdout
    rand = rng.random
    done = 0
    while done < n:
        k = min(CHUNK, n - done)
        picks = rng.choices(ROUTES, cum_weights=cum, k=k)
        lines = []
        append = lines.append
        for i, (_, method, target) in enumerate(picks, done):
            second = i * DAY // n
            if second != clock_second:
                clock_second = second
                clock = (START + timedelta(seconds=second)).strftime("%d/%b/%Y:%H:%M:%S +0000")
            path, size = target(rand(), rand())
            r = rand()
            append(f'{clients[int(r * 762)]} - - [{clock}] "{method} {path} HTTP/1.1" 200 {size} '
                   f'{REFERERS[int(r * 3000) % 3]} {AGENTS[int(r * 50000) % 5]}\n')
        try:
            out.write("".join(lines))
        except BrokenPipeError:  # `| head`: the reader has what it wanted
            sys.stderr.close()
            return
        done += k
    out.flush()


if __name__ == "__main__":
    main()
