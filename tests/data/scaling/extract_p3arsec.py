#!/usr/bin/env python3
"""Reads the speedup curves out of the P3ARSEC paper's published plots (vector PDFs drawn by
gnuplot) and writes one runs file per benchmark and curve: `CORES TIME_S`, with the time in
units of the sequential run (1/speedup), as `pctl extrapolate` reads them.

Source: De Sensi, De Matteis, Torquati, Mencagli, Danelutto, "Bringing Parallel Patterns out
of the Corner: the P3ARSEC Benchmark Suite", ACM TACO 14(4), 2017, doi:10.1145/3132710; the
plots are in github.com/ParaGroup/p3arsec, results_TACO/results_<platform>/*_speedup.pdf.
Nothing is estimated by eye: the axes' tick marks and the polylines' vertices are read from
the drawing commands, so a value is exact to the plot's resolution (0.05 pt, about 0.001 of
a unit of speedup).

Usage: extract_p3arsec.py PDF... (writes NAME-PLATFORM-SERIES.txt in the current directory)
"""
import re
import sys
import zlib


def streams(pdf):
    for m in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", pdf, re.S):
        try:
            yield zlib.decompress(m.group(1)).decode("latin1")
        except zlib.error:
            continue


def ticks(text):
    """Tick labels with their positions: (x or y in text space, value)."""
    out = []
    for m in re.finditer(r"1 0 0 1 ([\d.]+) ([\d.]+) Tm\s*\( ?(-?[\d.]+)\)Tj", text):
        out.append((float(m.group(1)), float(m.group(2)), float(m.group(3))))
    return out


def main():
    for path in sys.argv[1:]:
        pdf = open(path, "rb").read()
        text = max(streams(pdf), key=len)
        labels = ticks(text)
        # y ticks share one x (left of the axis); x ticks share one y (below it).
        ys = {}
        for x, y, v in labels:
            ys.setdefault(round(y), []).append((x, v))
        xrow = max(ys, key=lambda k: len(ys[k]))
        xlab = ys[xrow]
        # The y labels: left of the plot (its frame starts at x = 97.3 in text space).
        ylab = [(y, v) for x, y, v in labels if round(y) != xrow and x < 97.3]
        # The grid lines: a tick label's value at drawing coordinates (10x text space).
        ygrid = sorted(set(float(m.group(1)) for m in re.finditer(r"973 ([\d.]+) m\n1004\.5 \1 l", text)))
        xgrid = sorted(set(float(m.group(1)) for m in re.finditer(r"([\d.]+) 1028\.5 m\n\1 1060 l", text)))
        yv = sorted(v for _, v in ylab)
        xv = sorted(v for _, v in xlab)
        if len(ygrid) != len(yv) or len(xgrid) != len(xv):
            print(f"{path}: axes not understood, skipped", file=sys.stderr)
            continue
        y0, y1 = ygrid[0], ygrid[-1]
        x0, x1 = xgrid[0], xgrid[-1]

        def sp(y):
            return yv[0] + (y - y0) * (yv[-1] - yv[0]) / (y1 - y0)

        def cores(x):
            # The x ticks are not evenly spaced from 1 (1, 8, 16, ...): map piecewise.
            for i in range(len(xgrid) - 1):
                if xgrid[i] <= x <= xgrid[i + 1] + 0.01:
                    return xv[i] + (x - xgrid[i]) * (xv[i + 1] - xv[i]) / (xgrid[i + 1] - xgrid[i])
            return None

        # Series: a legend name, its legend stroke, then a polyline of many vertices.
        names = re.findall(r"\(([A-Za-z][^()]*)\)Tj", text)
        names = [n for n in names if n not in ("Speedup", "Parsec Parallelism Degree")
                 and " - " not in n]
        polys = re.findall(r"((?:[\d.]+ [\d.]+ [ml]\n){6,})S", text)
        base = path.rsplit("/", 1)[-1].replace("_speedup.pdf", "")
        for name, poly in zip(names, polys):
            # The legend's stroke comes first in the same path: keep the longest piece.
            pieces = re.split(r"\n(?=[\d.]+ [\d.]+ m)", poly)
            pts = re.findall(r"([\d.]+) ([\d.]+) [ml]", max(pieces, key=len))
            rows = []
            for x, y in pts:
                n, s = cores(float(x)), sp(float(y))
                if n is None or s <= 0:
                    continue
                rows.append((round(n), s))
            fname = f"{base}-{name.lower().replace(' ', '_')}.txt"
            with open(fname, "w") as f:
                f.write(f"# {base} ({name}): time relative to the sequential run, 1/speedup,\n")
                f.write("# read from the vector plot results_TACO/.../" + path.rsplit('/', 1)[-1] + "\n")
                f.write("# of github.com/ParaGroup/p3arsec (De Sensi et al., ACM TACO 14(4), 2017,\n")
                f.write("# doi:10.1145/3132710) by tests/data/scaling/extract_p3arsec.py.\n")
                f.write("# cores time_s speedup_as_plotted\n")
                for n, s in rows:
                    f.write(f"{n} {1 / s:.6f} # {s:.3f}\n")


main()
