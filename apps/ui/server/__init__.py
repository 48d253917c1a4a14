"""The server runtime: the set-up script, start-up warm-up, logins and their page, and the
line that lets a few pages load at a time (its waiting page)."""
