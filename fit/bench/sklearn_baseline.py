#!/usr/bin/env python3
"""The anchors' predictor on ftk's folds, for comparison with ftk fit.

Reads the CSV that ftk's benchmark exports (one row per sample, every
repeat and variant kept: key, fold (folds group a shape's repeats),
the anchor features f0..fN, the median time in ms) and, per key, trains
scikit-learn's RandomForestRegressor the way Vidur/Frontier train it
(n_estimators=250, random_state=0, all other arguments default; features:
linear ops [num_tokens], prefill attention [kv_cache_size,
prefill_chunk_size^2], decode attention [batch_size, kv_cache_size]; target:
the median) on the same folds; with a single fold it trains on every row
and scores them in-sample. Prints "key,mape_pct" lines.

Usage: sklearn_baseline.py FOLDS_CSV
"""
import csv
import sys
from collections import defaultdict

import numpy as np
from sklearn.ensemble import RandomForestRegressor


def main(path):
    groups = defaultdict(list)
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        nfeat = sum(1 for h in header if h[:1] == "f" and h[1:].isdigit())
        for row in r:
            groups[row[0]].append(row)
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["key", "mape_pct"])
    for key, rows in groups.items():
        fold = np.array([int(x[1]) for x in rows])
        X = np.array([[float(v) for v in x[2:2 + nfeat] if v != ""] for x in rows])
        y = np.array([float(x[2 + nfeat]) for x in rows])
        pred = np.zeros_like(y)
        folds = np.unique(fold)
        if len(folds) == 1:  # one fold: train on every row, score in-sample
            m = RandomForestRegressor(n_estimators=250, random_state=0, n_jobs=-1)
            m.fit(X, y)
            pred = m.predict(X)
        for k in folds if len(folds) > 1 else []:
            test = fold == k
            m = RandomForestRegressor(n_estimators=250, random_state=0, n_jobs=-1)
            m.fit(X[~test], y[~test])
            pred[test] = m.predict(X[test])
        pos = y > 0  # rows of 0 ms have no percentage error
        w.writerow([key, "%.4f" % (100 * np.mean(np.abs(pred[pos] - y[pos]) / y[pos]))])


if __name__ == "__main__":
    main(sys.argv[1])
