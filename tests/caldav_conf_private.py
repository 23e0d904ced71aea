"""python-caldav's own suite (its sdist's tests/test_caldav.py) pointed at Mycorrhizal's calendar
with the honest feature profile. Copied by tests/it/dav_clients.rs into the suite as
tests/conf_private.py; the server's address and account come in the environment.

What this server does not do, as python-caldav's compatibility flags say it:
- no_mkcalendar, no_delete_calendar: one calendar per account, made with it;
- no_todo, no_journal: the calendar holds events (tasks and journals are refused);
- no_scheduling: no RFC 6638 scheduling inbox or outbox.
"""

import os

test_public_test_servers = False
test_xandikos = False
test_radicale = False
caldav_servers = [
    {
        "name": "Mycorrhizal",
        "url": os.environ["MYCORRHIZAL_URL"].rstrip("/") + "/caldav/",
        "username": os.environ["MYCORRHIZAL_USER"],
        "password": os.environ["MYCORRHIZAL_PASSWORD"],
        "incompatibilities": ["no_mkcalendar", "no_delete_calendar", "no_todo", "no_journal", "no_scheduling"],
    }
]
