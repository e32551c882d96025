"""Reference retriever: real Lucene through Anserini (the engine inside Pyserini).

The pool is written as a JsonCollection, indexed by Anserini's IndexCollection (default
English analyzer, Porter stemming), and searched with Lucene's IndexSearcher and
BM25Similarity(k1=0.9, b=0.4), the query built by Anserini's bag-of-words generator.
Pyserini's `LuceneSearcher` is not used: Anserini rounds its scores to 4 decimals and nudges
ties apart, which would hide the raw Lucene scores the parity test compares.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hf_skillfollow.retrieval._base import Hit
from hf_skillfollow.retrieval._jvm import PyseriniUnavailable, jvm
from hf_skillfollow.retrieval._select import rank_hits, type_labels

if TYPE_CHECKING:
    from hf_skillfollow.skills import SkillPool

K1 = 0.9
B = 0.4
_FIELD = "contents"  # Anserini's Constants.CONTENTS


def _write_collection(pool: SkillPool, folder: Path) -> None:
    from hf_skillfollow.skills import collection_documents

    folder.mkdir(parents=True)
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as fh:
        for doc in collection_documents(pool):
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")


def _index(autoclass: Any, collection: Path, index: Path) -> None:
    args = ["-collection", "JsonCollection", "-input", str(collection), "-index", str(index),
            "-generator", "DefaultLuceneDocumentGenerator", "-threads", "1", "-storeRaw", "-quiet"]  # fmt: skip
    try:
        autoclass("io.anserini.index.IndexCollection").main(args)
    except Exception as exc:
        raise PyseriniUnavailable(f"Anserini could not index the pool ({exc})") from None


class PyseriniRetriever:
    """BM25 over each skill's `index_text`, computed by Lucene itself."""

    def __init__(self, pool: SkillPool, k1: float = K1, b: float = B) -> None:
        autoclass = jvm()
        self.pool = pool
        self._names = [s.name for s in pool.skills]
        self._types = type_labels(pool)
        self._tmp = tempfile.TemporaryDirectory(prefix="hf-skillfollow-lucene-")
        root = Path(self._tmp.name)
        _write_collection(pool, root / "collection")
        _index(autoclass, root / "collection", root / "index")
        directory = autoclass("org.apache.lucene.store.FSDirectory").open(
            autoclass("java.io.File")(str(root / "index")).toPath()
        )
        self._reader = autoclass("org.apache.lucene.index.DirectoryReader").open(directory)
        from jnius import cast

        # pyjnius cannot pick the IndexSearcher(IndexReader) overload from a DirectoryReader.
        reader = cast("org.apache.lucene.index.IndexReader", self._reader)
        self._searcher = autoclass("org.apache.lucene.search.IndexSearcher")(reader)
        self._searcher.setSimilarity(
            autoclass("org.apache.lucene.search.similarities.BM25Similarity")(k1, b)
        )
        self._analyzer = autoclass(
            "io.anserini.analysis.DefaultEnglishAnalyzer"
        ).newDefaultInstance()
        self._generator = autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
        stored = self._searcher.storedFields()
        position = {name: i for i, name in enumerate(self._names)}
        self._doc_to_pos = [
            position[stored.document(d).get("id")] for d in range(self._reader.maxDoc())
        ]

    def scores(self, query: str) -> np.ndarray:
        """Lucene's score of every skill (pool order) for `query`; 0 where it does not match."""
        out = np.zeros(len(self._names), dtype=np.float32)
        lucene_query = self._generator.buildQuery(_FIELD, self._analyzer, query)
        for hit in self._searcher.search(lucene_query, max(len(self._names), 1)).scoreDocs:
            out[self._doc_to_pos[hit.doc]] = hit.score
        return out

    def search(self, query: str, k: int = 3, types: Sequence[str] | None = None) -> list[Hit]:
        return rank_hits(self._names, self.scores(query), self._types, k=k, types=types)

    def close(self) -> None:
        self._reader.close()
        self._tmp.cleanup()
