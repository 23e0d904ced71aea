"""vdirsyncer's storage suite (its sdist's tests/storage/dav) pointed at Mycorrhizal's fixed
collections: the account's address book and calendar, emptied before each test. Copied by
tests/it/dav_clients.rs into the suite as tests/storage/servers/mycorrhizal/__init__.py, where
DAV_SERVER=mycorrhizal picks it; the server's address and account come in the environment."""

from __future__ import annotations

import os
import re
from urllib.parse import urljoin
from urllib.parse import urlsplit

import pytest
import requests


def _empty(url, auth):
    """Deletes every member of the collection at `url`."""
    body = '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:prop></D:propfind>'
    answer = requests.request("PROPFIND", url, data=body, headers={"Depth": "1"}, auth=auth, timeout=30)
    answer.raise_for_status()
    own = urlsplit(url).path
    for href in re.findall(r"<D:href>([^<]*)</D:href>", answer.text):
        if href != own and not href.endswith("/"):
            requests.delete(urljoin(url, href), auth=auth, timeout=30).raise_for_status()


class ServerMixin:
    @pytest.fixture
    def get_storage_args(self, request, aio_connector):
        async def inner(collection="test"):
            base = os.environ["MYCORRHIZAL_URL"].rstrip("/")
            user, password = os.environ["MYCORRHIZAL_USER"], os.environ["MYCORRHIZAL_PASSWORD"]
            account = os.environ["MYCORRHIZAL_ID"]
            if self.storage_class.storage_name == "carddav":
                url = f"{base}/carddav/{account}/contacts/"
            else:
                url = f"{base}/caldav/{account}/calendar/"
            if collection not in (None, "test"):
                pytest.skip("one address book and one calendar per account: no other collection is made")
            _empty(url, (user, password))
            return {"url": url, "username": user, "password": password, "connector": aio_connector}

        return inner
