"""The feedback loop: route events, feedback, statistics, the usage prior, retention."""
