"""The app shell's low-level pieces: the theme, plain text, held sizes, number boxes, the one
road from a URL to the inputs, the busy note, and what only the browser knows. The app put
together from the pages (template, navigation, landing page, the list of pages) is in
:mod:`apps.ui.views`."""
