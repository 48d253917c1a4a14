"""Charts: what every chart shares, each experiment kind's chart, and the lessons drawn on
them."""
