"""Reads the HDR histograms degrade stores (`endpoint_results.histogram`: HdrHistogram's V2 encoding, the
format the Java, C and Rust libraries share) and adds them up, so a bench can compare the percentiles of all
of its rounds' requests rather than a median of each round's few dozen slowest. Standard library only.

The V2 layout: a 40-byte header (cookie, payload length, normalizing offset, significant digits, lowest and
highest trackable values, a double), then every bucket's count as a ZigZag LEB128 varint, a negative one
standing for that many empty buckets.
"""
import math
import struct

# The V2 cookie's base; bits 4-7 carry a word size, which the Rust library sets to 1 (0x1c849313).
V2_COOKIE_BASE = 0x1C849303


class Histogram:
    def __init__(self, significant_digits, lowest):
        self.digits = significant_digits
        self.lowest = lowest
        sub_bucket_count_magnitude = math.ceil(math.log2(2 * 10**significant_digits))
        self.half_magnitude = max(sub_bucket_count_magnitude, 1) - 1
        self.half_count = 1 << self.half_magnitude
        self.unit_magnitude = int(math.floor(math.log2(lowest)))
        self.counts = {}

    def add(self, other):
        if (other.digits, other.lowest) != (self.digits, self.lowest):
            raise ValueError("histograms of different precision cannot be added bucket by bucket")
        for index, count in other.counts.items():
            self.counts[index] = self.counts.get(index, 0) + count

    def total(self):
        return sum(self.counts.values())

    def _highest_equivalent(self, index):
        bucket = (index >> self.half_magnitude) - 1
        sub_bucket = (index & (self.half_count - 1)) + self.half_count
        if bucket < 0:
            sub_bucket -= self.half_count
            bucket = 0
        value = sub_bucket << (bucket + self.unit_magnitude)
        return value + (1 << (bucket + self.unit_magnitude)) - 1

    def value_at_quantile(self, quantile):
        """The highest value equivalent to the bucket where the count reaches `quantile` of the total."""
        wanted = max(1, math.ceil(quantile * self.total()))
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= wanted:
                return self._highest_equivalent(index)
        raise ValueError("an empty histogram has no quantiles")


def _varint(data, at):
    """One ZigZag LEB128 value (at most 9 bytes, the ninth using all 8 bits) and where the next begins."""
    value, shift = 0, 0
    for i in range(9):
        byte = data[at + i]
        if i == 8:
            value |= byte << shift
            return (value >> 1) ^ -(value & 1), at + 9
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte & 0x80 == 0:
            return (value >> 1) ^ -(value & 1), at + i + 1
    raise ValueError("unreachable")


def decode(data):
    cookie, length, offset, digits, lowest, _highest, _ratio = struct.unpack(">IIIIQQd", data[:40])
    if cookie & ~0xF0 != V2_COOKIE_BASE:
        raise ValueError(f"not a V2 histogram (cookie {cookie:#x}): a compressed one is not read here")
    if offset != 0:
        raise ValueError("a shifted histogram (normalizing offset) is not read here")
    histogram = Histogram(digits, lowest)
    payload, at, index = data[40 : 40 + length], 0, 0
    while at < len(payload):
        count, at = _varint(payload, at)
        if count < 0:
            index += -count
        else:
            if count:
                histogram.counts[index] = count
            index += 1
    return histogram
