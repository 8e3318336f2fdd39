"""The learned localizer at index time: per-repository adaptation and the LightGBM fit it shares with
`semantica train-localizer`."""
