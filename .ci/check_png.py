#!/usr/bin/env python3
"""Fail unless a PNG screenshot shows something besides its background.

Stdlib only (zlib + struct), so CI needs no image library. Decodes 8-bit RGB/RGBA,
non-interlaced PNGs (what Bevy's screenshot saver writes), takes the most common colour as
the background (the clear colour), and requires at least MIN_FRACTION of the pixels to
differ from it noticeably, and a few distinct colours (a lit, shaded character, not a flat fill).
"""
import struct
import sys
import zlib
from collections import Counter

MIN_FRACTION = 0.02


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise SystemExit(f"{path}: unsupported PNG (depth {depth}, colour type {ctype})")
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        rows.append(bytes(line))
        prev = line
    pixels = [tuple(r[x * bpp:x * bpp + 3]) for r in rows for x in range(width)]
    return width, height, pixels


def main():
    path = sys.argv[1]
    width, height, pixels = decode(path)
    background, _ = Counter(pixels).most_common(1)[0]
    differ = sum(1 for p in pixels if max(abs(p[i] - background[i]) for i in range(3)) > 24)
    fraction = differ / len(pixels)
    colours = len(set(pixels))
    print(f"{path}: {width}x{height}, background {background}, "
          f"{fraction:.1%} of pixels differ, {colours} distinct colours")
    if fraction < MIN_FRACTION or colours < 64:
        raise SystemExit(f"{path}: looks blank (only the clear colour was drawn)")


if __name__ == "__main__":
    main()
