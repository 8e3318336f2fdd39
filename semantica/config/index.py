"""The indexing area of `Config`: what is read, how it is chunked, embedded and stored in snapshots.
Each section mirrors a block of conf/default.yaml."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PathsConfig:
    """Where snapshots and caches live."""

    index_root: str = ".semantica/index"
    cache_dir: str = ".semantica/cache"


@dataclass
class DiscoverConfig:
    """Which files of a repository are indexed."""

    max_file_bytes: int = 1_000_000
    binary_sniff_bytes: int = 8192
    vendored_dirs: list[str] = field(
        default_factory=lambda: [
            "node_modules", "vendor", "third_party", "bower_components", ".git", "dist",
            "build", "__pycache__", ".venv", "venv", "site-packages", ".tox", ".mypy_cache",
        ]
    )
    generated_suffixes: list[str] = field(
        default_factory=lambda: [".min.js", ".min.css", ".bundle.js", "_pb2.py", ".pb.go", ".lock"]
    )
    max_line_chars: int = 5000
    include_globs: list[str] = field(default_factory=list)  # [] = every file; e.g. ["*.py"] (eval)
    ignore_file: str = ".semanticaignore"  # gitignore syntax, any level: index-only exclusions ("" = off)


@dataclass
class ChunkConfig:
    """Chunk sizes, in code tokens (see `semantica.stores.tokenizer.count_tokens`)."""

    max_tokens: int = 256
    overlap_tokens: int = 32
    window_lines: int = 40
    window_overlap_lines: int = 8
    min_window_tokens: int = 4


@dataclass
class EncoderConfig:
    """The bi-encoder. An empty `model_path` means the installed all-MiniLM-L6-v2 package."""

    model_path: str = ""
    model_id: str = "sentence-transformers/all-MiniLM-L6-v2"
    batch_size: int = 32
    max_length: int = 256
    query_max_length: int = 256
    device: str = "auto"
    torch_threads: int = 0
    cache_segment_vectors: int = 4096
    batch_tokens: int = 1024  # padded tokens per forward pass, texts sorted by length (0 = fixed batch_size; docs/fast.md)
    group_texts: int = 1024  # texts handed to the encoder at once; it sorts them by length and batches by tokens
    runtime: str = "openvino"  # openvino (the ONNX export, bf16 where the CPU has it) | onnx (fp32) | torch
    export_dir: str = ""  # where ONNX exports are cached by weights hash ("" = ~/.cache/semantica/onnx)


@dataclass
class FaissConfig:
    """Dense shards: exact inner product below `flat_max_vectors`, IVF-PQ above."""

    flat_max_vectors: int = 100_000
    shard_max_vectors: int = 250_000
    ivf_nlist: int = 1024
    pq_m: int = 48
    pq_bits: int = 8
    nprobe: int = 32
    query_threads: int = 1


@dataclass
class LuceneConfig:
    """Lexical shards (Anserini through Pyserini)."""

    shard_max_docs: int = 500_000
    threads: int = 1
    java_heap: str = "1g"
    max_clause_count: int = 1024
    max_query_terms: int = 512


@dataclass
class IndexConfig:
    """Snapshot handling."""

    keep_snapshots: int = 2
    stale_build_s: float = 3600.0  # a `.tmp` build without a lock file (older versions) is stale after this
    # index kinds a build writes, in order (semantica.stores.index_kinds; each may also have its own switch)
    kinds: list[str] = field(default_factory=lambda: ["faiss", "lucene", "tokens", "history", "localizer",
                                                          "function_vectors", "exact"])
    overlap_files: int = 256  # in-process indexing parses this many files ahead of the encoder (0: parse all, then embed)
    overlap_depth: int = 2  # partitions parsed ahead at most (bounds the memory the overlap holds)
    # `index` (or `index-batch` on Ray) of one repository publishes a first snapshot without the model-built kinds
    # (`DENSE_KINDS`: chunk, token and function vectors) as soon as the rest is written, then their successor
    # (docs/architecture.md)
    dense_later: bool = False


@dataclass
class TokenVectorsConfig:
    """Document token vectors stored in the snapshot at index time, so late interaction at query
    time is MaxSim over memory-mapped codes instead of encoding the candidates."""

    enabled: bool = True
    dim: int = 128  # int8/float16: PCA projection of the token outputs (0 = keep the encoder's width)
    quantization: str = "pq"  # pq (FAISS product quantiser, pq_m bytes/token) | int8 (per-token scale) | float16
    pq_m: int = 64  # sub-quantisers (bytes per token) for pq; must divide the encoder width
    fit_sample_tokens: int = 20_000  # token vectors the projection is fitted on (first index per model; docs/fast.md)
    fit_iterations: int = 10  # k-means iterations of the pq codec fit (FAISS's default is 25; docs/fast.md)
    fit_threads: int = 1  # FAISS OpenMP threads of the codec fit (0 = FAISS's default; same codec either way)
    fit_background: bool = True  # fit on a thread while the encoder goes on (same codec and codes; docs/fast.md)
    cache_segment_chunks: int = 2048  # chunks per content-addressed cache segment


@dataclass
class ShardsConfig:
    """Incremental shard writes: chunks are partitioned by a hash of their path, and a new snapshot
    hard-links every partition's FAISS, Lucene and token shard whose content is unchanged."""

    partition_chunks: int = 1024  # target chunks per partition (a one-file change rebuilds one partition)
    max_partitions: int = 64  # bound on the per-query fan-out; larger repos get larger partitions
    reuse: bool = True  # false: every snapshot writes every shard (still partitioned)


@dataclass
class BranchesConfig:
    """Retention of branch snapshots (`index --ref B` publishes `NAME@B`); the default branch keeps
    `index.keep_snapshots`."""

    keep_snapshots: int = 2  # published snapshots kept per non-default branch
    keep: dict[str, int] = field(default_factory=dict)  # per-branch override, e.g. {release: 5}


@dataclass
class IndexSettings:
    """The indexing sections of `Config`: discovery, chunking, the encoder and the snapshot's shards."""

    paths: PathsConfig = field(default_factory=PathsConfig)
    discover: DiscoverConfig = field(default_factory=DiscoverConfig)
    chunk: ChunkConfig = field(default_factory=ChunkConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    faiss: FaissConfig = field(default_factory=FaissConfig)
    lucene: LuceneConfig = field(default_factory=LuceneConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    token_vectors: TokenVectorsConfig = field(default_factory=TokenVectorsConfig)
    shards: ShardsConfig = field(default_factory=ShardsConfig)
    branches: BranchesConfig = field(default_factory=BranchesConfig)
