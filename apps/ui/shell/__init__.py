"""The app shell: the template, navigation and landing page, the list of pages, the theme,
the one road from a URL to the inputs, and what only the browser knows."""
