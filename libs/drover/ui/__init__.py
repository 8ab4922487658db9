"""The web UI (`drover ui`): a client of the proxy like the CLI, not a service.

Where is X:

* wiring, routes, serving: :mod:`.app`; settings and defaults: :mod:`.config`
* the channel to drover and the user's token per request: :mod:`.backend`
* HTTP handlers (page shells, fragments, actions, stream): :mod:`.handlers`
* each page's data: :mod:`.jobs_page`, :mod:`.job_page`, :mod:`.evals_page`,
  :mod:`.nodes_page`; list filters: :mod:`.queries`
* words and numbers on the pages (pure): :mod:`.present`
* the buttons (one RPC each): :mod:`.actions`
* what the token may do (asked of the server): :mod:`.capabilities`
* the live feed (Subscribe as server-sent events): :mod:`.events`
* a failed call as the CLI words it, with an HTTP status: :mod:`.errors`
* HTML: ``templates/`` (Jinja, :mod:`.render`); ``static/``: htmx (vendored,
  from the npm registry's ``htmx.org``), ``ui.js`` (token, live stream),
  ``ui.css``. Every asset ships in the package: no CDN.
"""
