"""The learned localizer's offline side: the public-history corpus, its candidate lists and features, training."""
