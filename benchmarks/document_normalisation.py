"""Would normalising registry documents (core/data/text.py, as queries and stubs are) move the stored figures?

    nice -n 10 .venv/bin/python benchmarks/document_normalisation.py [--registries full,sealtools,livemcpbench]

For each shipped registry: the documents whose tokens normalisation changes (a change of whitespace alone leaves the
tokens, so the vector, as they are) are embedded both ways with the reference encoder (sentence-transformers, which
made the shipped vectors), in float32 both, so that only the text differs; every other row is the shipped vector.
Then every test query's RtP top-5 and recall@5 (api_list gold) against the two matrices. Issue 37's note and README
("Text normalisation") give its figures: they decided that documents are embedded as they are.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.data.loaders import queries_for
from core.data.text import normalise
from core.retrieval.assemble import build_retriever, load_reference_encoder
from core.settings import Settings

K = 5


def measure(registry_name: str) -> dict:
    settings = dataclasses.replace(Settings.from_env(), registry=registry_name)
    retriever, _ = build_retriever(settings)
    registry, shipped = retriever.registry, retriever.index.vectors
    reference = load_reference_encoder(settings.embedding_model)
    tokens = reference.model.tokenizer.tokenize
    changed = [i for i, doc in enumerate(registry.documents) if tokens(normalise(doc)) != tokens(doc)]
    raw, normalised = shipped.copy(), shipped.copy()
    if changed:
        raw[changed] = reference.encode([registry.documents[i] for i in changed])
        normalised[changed] = reference.encode([normalise(registry.documents[i]) for i in changed])
    queries = queries_for(settings)
    vectors = retriever.encoder.encode([q.query for q in queries])
    tops = {name: np.argsort(-(vectors @ matrix.T), axis=1, kind="stable")[:, :K]
            for name, matrix in (("raw", raw), ("normalised", normalised))}

    def recall(top: np.ndarray) -> float:
        values = [len(gold & set(row.tolist())) / len(gold) for q, row in zip(queries, top)
                  if (gold := set(registry.rows_of(q.gold("api_list"))))]
        return round(float(np.mean(values)), 4)

    return {"registry": registry.name, "documents": len(registry), "tokens_changed": len(changed),
            "min_cosine": round(float(min((raw[i] @ normalised[i] for i in changed), default=1.0)), 4),
            "queries": len(queries),
            "top5_set_changed": int(sum(set(a) != set(b) for a, b in zip(tops["raw"], tops["normalised"]))),
            "top5_order_changed": int(sum(list(a) != list(b) for a, b in zip(tops["raw"], tops["normalised"]))),
            "recall@5_raw": recall(tops["raw"]), "recall@5_normalised": recall(tops["normalised"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--registries", default="full,sealtools,livemcpbench")
    for name in parser.parse_args().registries.split(","):
        print(json.dumps(measure(name)))


if __name__ == "__main__":
    main()
