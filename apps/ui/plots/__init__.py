"""Charts: what every chart shares, each experiment kind's chart, the lessons drawn on them,
and each experiment's page description (what its page shows beyond its class)."""
