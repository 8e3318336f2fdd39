"""The learned localizer at query time: `LearnedStage` ranks a served snapshot's candidates (built by
`semantica.stores.localizer`, the code training shares) with the shipped models; `dense` is the dense function
channel, `history_input` the snapshot's history as the features' inputs."""
