"""``bench.auc_error``'s report: the binned AUCs' errors against the exact AUCs over the keys."""

from __future__ import annotations

import pandas as pd

from bench.auc_error import errors_text


def _rows(key: str, values: dict[str, tuple[float, float | None]]) -> list[dict[str, object]]:
    return [
        {
            "model_version": "v1",
            "slice_name": "country",
            "slice_value": key,
            "metric": metric,
            "value": value,
            "error_bound": bound,
        }
        for metric, (value, bound) in values.items()
    ]


def test_errors_are_the_absolute_differences_per_key() -> None:
    metrics = pd.DataFrame(
        [
            # Key A: ROC off by 3e-5 (bound 1e-3), PR off by 2e-4 (bound 1e-4: outside it).
            *_rows(
                "A",
                {
                    "roc_auc": (0.8, None),
                    "roc_auc_binned": (0.80003, 1e-3),
                    "pr_auc": (0.5, None),
                    "pr_auc_binned": (0.4998, 1e-4),
                },
            ),
            # Key B: ROC off by 5e-4, PR exact.
            *_rows(
                "B",
                {
                    "roc_auc": (0.7, None),
                    "roc_auc_binned": (0.6995, 1e-3),
                    "pr_auc": (0.6, None),
                    "pr_auc_binned": (0.6, 0.0),
                },
            ),
        ]
    )

    roc, pr = errors_text(metrics, "binary", 1_000, 1e-4)

    assert "over 2 keys: median 2.65e-04, max 5.00e-04, 1 keys above 0.0001" in roc
    assert roc.endswith("all within error_bound: True")
    assert "over 2 keys: median 1.00e-04, max 2.00e-04, 1 keys above 0.0001" in pr
    assert pr.endswith("all within error_bound: False")
