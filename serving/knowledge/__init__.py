"""Knowledge at query time: trusted relevant entries first in the context, a bounded boost for the hits
they are about, and feedback that moves their trust (the store and the score live in `serving.knowledge`)."""
