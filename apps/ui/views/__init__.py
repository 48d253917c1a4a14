"""Whole pages and the app made of them: the generic experiment page, the pages of
experiments 9, 11 and 12, the derivation page and the grid explorer; the app (template,
navigation, the page named in the URL), the list of pages, the landing page, and the
``panel serve --setup`` script."""
