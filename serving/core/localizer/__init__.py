"""The learned localizer at query time: `LearnedStage` ranks a served snapshot's candidates (built by
semantica.localizer, the code training and index-time adaptation share) with the shipped or adapted models."""
