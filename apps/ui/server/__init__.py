"""The server runtime: start-up warm-up, logins and their page, the line that lets a few
pages load at a time (its waiting page), and closed sessions' memory. The set-up script,
which builds the app, is :mod:`apps.ui.views.serve_setup`."""
