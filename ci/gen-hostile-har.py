#!/usr/bin/env python3
"""A hostile HAR recording, gzip-compressed, for `degrade tape import` to read in bounded memory (issue 41).

Usage: python3 ci/gen-hostile-har.py KIND MEGABYTES OUT.har.gz

KIND `entries`: `{"log":{"entries":[[0,0,0,…]]}}`, one item of `entries` that is not an entry but an array of
MEGABYTES (decimal) of zeros; 120 MB compress to about 117 KB.
KIND `answer`: a valid HAR of one page whose first entry (POST /api/boards) was answered a JSON array of
MEGABYTES of zeros (`response.content.text` = "[0,0,…]"), and a second entry (GET /api/boards/4711) answered
`{"id":4711}`; 250 MB compress to about 244 KB. Written as it is made: Python's memory stays small.
"""
import gzip
import sys

kind, megabytes, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
zeros = max(1, int(megabytes * 1_000_000 / 2))
CHUNK = "0," * 1_000_000


def zeros_array(out):
    out.write("[")
    left = zeros - 1
    while left > 0:
        n = min(left, 1_000_000)
        out.write(CHUNK[: 2 * n])
        left -= n
    out.write("0]")


def entry(started, method, url, extra, answer_status, write_answer):
    out.write(f'{{"pageref":"page_1","startedDateTime":"2026-11-30T10:00:0{started}.000Z",'
              f'"request":{{"method":"{method}","url":"https://api.example.com{url}","headers":[]{extra}}},'
              f'"response":{{"status":{answer_status},"headers":[],"content":{{"mimeType":"application/json","text":"')
    write_answer(out)
    out.write('"}}}')


with gzip.open(path, "wt", compresslevel=6) as out:
    if kind == "entries":
        out.write('{"log":{"entries":[')
        zeros_array(out)
        out.write("]}}")
    elif kind == "answer":
        out.write('{"log":{"version":"1.2","pages":[{"id":"page_1","title":"Boards"}],"entries":[')
        post = ',"postData":{"mimeType":"application/json","text":"{\\"title\\":\\"Q4\\"}"}'
        entry(0, "POST", "/api/boards", post, 201, zeros_array)
        out.write(",")
        entry(1, "GET", "/api/boards/4711", "", 200, lambda o: o.write('{\\"id\\":4711}'))
        out.write("]}}")
    else:
        sys.exit(f"unknown kind {kind}: entries or answer")
