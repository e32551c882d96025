"""Default retriever: the `bm25s` package, made to score exactly like Lucene's BM25Similarity.

bm25s (method "lucene") already has Lucene's idf and term-frequency formula; what it lacks is
Lucene's lossy one-byte length norm. `_LuceneNormBM25` overrides only the index build so each
(document, term) entry is computed with the decoded length and in Lucene's float32 operation
order; vocabulary, document frequencies, idf, the sparse index and query scoring stay bm25s's.
Query scores are summed in float64 and rounded to float32, as Lucene's disjunction does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import bm25s
import numpy as np
import scipy.sparse as sp
from bm25s import scoring as _bm25s_scoring

from hf_skillfollow.retrieval._analyzer import analyze
from hf_skillfollow.retrieval._base import Hit
from hf_skillfollow.retrieval._lucene_norm import lucene_length
from hf_skillfollow.retrieval._select import rank_hits, type_labels

if TYPE_CHECKING:
    from hf_skillfollow.skills import SkillPool

K1 = 0.9
B = 0.4


def _norm_inverse(lengths: np.ndarray, avgdl: np.float32, k1: float, b: float) -> np.ndarray:
    # BM25Similarity's cache: 1f / (k1 * ((1 - b) + b * LENGTH_TABLE[i] / avgdl)), all in float.
    f32 = np.float32
    k1_, b_ = f32(k1), f32(b)
    return f32(1) / (k1_ * ((f32(1) - b_) + b_ * lengths.astype(np.float32) / avgdl))


def _lucene_idf(doc_freqs: dict[int, int], n_vocab: int, doc_count: int) -> np.ndarray:
    # bm25s's "lucene" idf, log(1 + (N - df + 0.5) / (df + 0.5)) in double, stored as float.
    idf_fn = _bm25s_scoring._select_idf_scorer("lucene")
    idf = np.zeros(n_vocab, dtype=np.float32)
    for token_id, df in doc_freqs.items():
        if df:
            idf[token_id] = idf_fn(df, N=doc_count)
    return idf


def _postings(corpus_token_ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(document, term, frequency) triples of the corpus."""
    rows, cols, freqs = [], [], []
    for doc, token_ids in enumerate(corpus_token_ids):
        for token_id, tf in Counter(token_ids).items():
            rows.append(doc)
            cols.append(token_id)
            freqs.append(tf)
    return (
        np.array(rows, dtype=np.int64),
        np.array(cols, dtype=np.int64),
        np.array(freqs, dtype=np.float32),
    )


class _LuceneNormBM25(bm25s.BM25):
    """bm25s.BM25 whose document lengths are Lucene's decoded one-byte norms."""

    def build_index_from_ids(
        self, unique_token_ids, corpus_token_ids, show_progress=True, leave_progress=False
    ):  # type: ignore[no-untyped-def]
        n_docs, n_vocab = len(corpus_token_ids), len(unique_token_ids)
        lengths = np.array([len(doc) for doc in corpus_token_ids], dtype=np.int64)
        doc_count = max(int((lengths > 0).sum()), 1)  # Lucene counts only documents with terms
        avgdl = np.float32(lengths.sum() / doc_count)  # exact sumTotalTermFreq / docCount
        doc_freqs = _bm25s_scoring._calculate_doc_freqs(
            corpus_token_ids, unique_token_ids, show_progress=False
        )
        idf = _lucene_idf(doc_freqs, n_vocab, doc_count)
        norm_inv = _norm_inverse(
            np.array([lucene_length(int(n)) for n in lengths]), avgdl, self.k1, self.b
        )
        rows, cols, freqs = _postings(corpus_token_ids)
        weight = idf[cols]
        # BM25Scorer.score: weight - weight / (1f + freq * normInverse), in float.
        scores = weight - weight / (np.float32(1) + freqs * norm_inv[rows])
        matrix = sp.csc_matrix((scores.astype(np.float64), (rows, cols)), shape=(n_docs, n_vocab))
        self.nonoccurrence_array = None
        return {
            "data": matrix.data,
            "indices": matrix.indices,
            "indptr": matrix.indptr,
            "num_docs": n_docs,
        }


class Bm25sRetriever:
    """BM25 (k1=0.9, b=0.4) over each skill's `index_text`, with Lucene's analyzer and norms."""

    def __init__(self, pool: SkillPool, k1: float = K1, b: float = B) -> None:
        from hf_skillfollow.skills import index_text

        self.pool = pool
        self._names = [s.name for s in pool.skills]
        self._types = type_labels(pool)
        corpus = [analyze(index_text(s)) for s in pool.skills]
        self._empty = not any(corpus)
        self._bm25 = _LuceneNormBM25(k1=k1, b=b, method="lucene", dtype="float64")
        if not self._empty:
            self._bm25.index(corpus, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """Lucene score of every skill (pool order) for `query`, as float32."""
        terms = analyze(query)
        known = self._bm25.get_tokens_ids(terms) if not self._empty else []
        if not known:
            return np.zeros(len(self._names), dtype=np.float32)
        return self._bm25.get_scores(known).astype(np.float32)

    def search(self, query: str, k: int = 3, types: Sequence[str] | None = None) -> list[Hit]:
        return rank_hits(self._names, self.scores(query), self._types, k=k, types=types)
