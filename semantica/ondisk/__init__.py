"""The on-disk contract beside `semantica.layout`: snapshot paths and checksums, branch keys, repository
names, build locks and stats, a snapshot's source and its freshness."""
