"""Index kinds: what a snapshot stores besides its tables, one module per kind (`vectors` FAISS, `lucene`
chunk BM25, `tokens` late-interaction vectors, `history` past commits,
`localizer` the learned localizer's BM25 fields, `function_vectors` the dense function channel's,
`exact` trigram postings and file contents for grep), each
registered here in the order they are written. A new kind is one module plus one `register_index_kind` line
(or a call from the code that adds it); `Snapshot.index(name)` opens it."""

from semantica.stores.index_kinds.base import IndexKind, KindWritten, WriteContext
from semantica.stores.index_kinds.exact import ExactKind
from semantica.stores.index_kinds.function_vectors import FunctionVectorsKind
from semantica.stores.index_kinds.history import HistoryKind
from semantica.stores.index_kinds.localizer import LocalizerKind
from semantica.stores.index_kinds.lucene import LuceneKind
from semantica.stores.index_kinds.registry import index_kind, index_kinds, register_index_kind, unregister_index_kind
from semantica.stores.index_kinds.sharding import ShardInputs, ShardLinker
from semantica.stores.index_kinds.tokens import TokensKind
from semantica.stores.index_kinds.vectors import VectorsKind

for _kind in (VectorsKind(), LuceneKind(), TokensKind(), HistoryKind(), LocalizerKind(),
              FunctionVectorsKind(), ExactKind()):
    register_index_kind(_kind)

__all__ = ["IndexKind", "KindWritten", "ShardInputs", "ShardLinker", "WriteContext", "index_kind", "index_kinds",
           "register_index_kind", "unregister_index_kind"]
