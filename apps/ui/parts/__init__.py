"""Parts of a page: inputs and their widgets, cards, prediction, the calculation, sources,
uploads and downloads."""
