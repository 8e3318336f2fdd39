"""Learning to rank: mining labelled hits and training the LightGBM ranker."""
