"""Stores: how each index a snapshot holds is written and read (Lucene, FAISS, graph, token vectors,
exact/trigram, history, the localizer's table), shared by pipelines/ and serving/."""
