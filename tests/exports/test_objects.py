"""Object stores, local and S3: temp objects stay invisible until published, never overwrite."""

from __future__ import annotations

import hashlib
import shutil
import threading
import urllib.request
from pathlib import Path

import pytest

from reportexport.core.links import LinkError, sign_download, verify_download
from reportexport.objects import (
    ObjectExistsError,
    ObjectStore,
    ObjectStoreUnavailableError,
    final_key,
    is_temp,
    job_of,
    open_object_store,
)


def keys(store: ObjectStore) -> set[str]:
    return {info.key for info in store.list_objects()}


def test_a_temp_object_is_invisible_until_published(object_store: ObjectStore) -> None:
    target = final_key(7, "orders-7.csv")
    temp = object_store.create_temp(7, 1, target)
    temp.write(b"a,b\n")
    temp.write(b"1,2\n")
    assert object_store.stat(target) is None
    assert all(is_temp(key) for key in keys(object_store))
    temp.publish()
    info = object_store.stat(target)
    assert info is not None
    assert info.size == 8
    with object_store.read(target) as handle:
        assert handle.read() == b"a,b\n1,2\n"
    assert keys(object_store) == {target}


def test_an_aborted_temp_object_leaves_nothing(object_store: ObjectStore) -> None:
    temp = object_store.create_temp(8, 1, final_key(8, "x.csv"))
    temp.write(b"partial")
    temp.abort()
    temp.abort()  # idempotent
    assert keys(object_store) == set()


def test_publishing_never_overwrites_an_object(object_store: ObjectStore) -> None:
    target = final_key(9, "x.csv")
    first = object_store.create_temp(9, 1, target)
    first.write(b"first")
    first.publish()
    second = object_store.create_temp(9, 2, target)
    second.write(b"second")
    with pytest.raises(ObjectExistsError):
        second.publish()
    with object_store.read(target) as handle:
        assert handle.read() == b"first"


def test_an_attempt_again_on_the_same_lease_replaces_what_the_first_left(
    object_store: ObjectStore,
) -> None:
    """The first attempt of a run could not remove its temp object (an outage refused the
    delete too): the next attempt under the same lease token starts afresh and publishes only
    its own bytes."""
    target = final_key(13, "x.csv")
    first = object_store.create_temp(13, 4, target)
    first.write(b"left behind")
    second = object_store.create_temp(13, 4, target)
    second.write(b"a\n1\n")
    second.publish()
    with object_store.read(target) as handle:
        assert handle.read() == b"a\n1\n"
    first.abort()  # the first attempt's writer finds nothing of its own to drop
    assert keys(object_store) == {target}


def test_a_temp_object_can_be_deleted_by_its_key(object_store: ObjectStore) -> None:
    temp = object_store.create_temp(10, 3, final_key(10, "x.csv"))
    temp.write(b"abc")
    assert job_of(temp.key) == 10
    object_store.delete(temp.key)
    assert keys(object_store) == set()
    temp.abort()  # the writer, elsewhere, finds its object gone


def test_a_large_object_goes_up_in_parts(s3_endpoint: str) -> None:
    from reportexport.objects.s3 import S3ObjectStore
    from tests.helpers import new_bucket

    store = S3ObjectStore(new_bucket(s3_endpoint), part_size=5 * 1024 * 1024)
    target = final_key(11, "big.csv")
    temp = store.create_temp(11, 1, target)
    digest = hashlib.sha256()
    chunk = bytes(range(256)) * 4096  # 1 MiB
    for _ in range(12):
        temp.write(chunk)
        digest.update(chunk)
        assert len(temp._buffer) < store.part_size  # bounded memory
    temp.publish()
    assert len(temp._parts) == 3
    with store.read(target) as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == digest.hexdigest()


def test_s3_download_links_are_presigned_and_name_the_file(s3_endpoint: str) -> None:
    from reportexport.objects.s3 import S3ObjectStore
    from tests.helpers import new_bucket

    store = S3ObjectStore(new_bucket(s3_endpoint))
    temp = store.create_temp(12, 1, final_key(12, "orders.csv"))
    temp.write(b"a\n1\n")
    temp.publish()
    url = store.download_url(final_key(12, "orders.csv"), "orders.csv", 60)
    with urllib.request.urlopen(url) as response:
        assert response.read() == b"a\n1\n"
        assert response.headers["Content-Disposition"] == 'attachment; filename="orders.csv"'


def test_local_download_links_are_signed_and_expire() -> None:
    token = sign_download(b"secret", "exports/1/a.csv", "a.csv", 60, now=1000)
    assert verify_download(b"secret", token, now=1059) == ("exports/1/a.csv", "a.csv")
    with pytest.raises(LinkError) as expired:
        verify_download(b"secret", token, now=1061)
    assert expired.value.expired
    with pytest.raises(LinkError, match="signature"):
        verify_download(b"other", token, now=1000)
    with pytest.raises(LinkError, match="malformed"):
        verify_download(b"secret", "garbage", now=1000)


def test_a_key_cannot_leave_the_local_store(local_objects: ObjectStore) -> None:
    with pytest.raises(ValueError, match="leaves the object store"):
        local_objects.stat("../../etc/passwd")


@pytest.mark.parametrize("stand_in", ["file", "dangling symlink"])
def test_a_local_store_whose_folder_is_gone_is_unavailable_not_a_job_error(
    tmp_path: Path, stand_in: str
) -> None:
    """A folder replaced by a file or a dangling symlink (an unmounted volume) refuses writes as
    the store's outage, so the worker paces claims instead of failing jobs as internal_error."""
    root = tmp_path / "objects"
    store = open_object_store(f"file://{root}", link_secret=b"x")
    shutil.rmtree(root, ignore_errors=True)
    if stand_in == "file":
        root.write_text("not a folder")
    else:
        root.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ObjectStoreUnavailableError):
        store.create_temp(1, 1, final_key(1, "a.csv"))


def test_a_local_store_that_is_not_there_cannot_say_an_object_is_missing(tmp_path: Path) -> None:
    """Asked about an object while its folder is gone, the store says it is unavailable, so
    the write_csv_object check retries instead of raising a false alarm on a good export."""
    root = tmp_path / "objects"
    store = open_object_store(f"file://{root}", link_secret=b"x")
    temp = store.create_temp(1, 1, final_key(1, "a.csv"))
    temp.write(b"a\n1\n")
    temp.publish()
    aside = root.rename(tmp_path / "aside")
    root.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ObjectStoreUnavailableError):
        store.stat(final_key(1, "a.csv"))
    root.unlink()
    aside.rename(root)
    info = store.stat(final_key(1, "a.csv"))
    assert info is not None
    assert info.size == 4
    assert store.stat(final_key(2, "b.csv")) is None


def test_processes_starting_together_all_read_the_mark_they_share(tmp_path: Path) -> None:
    """Seen in the fault suite: a process read the store's mark while another had created it
    and not yet written it, took it for another job store's and exited. A mark is read whole
    or not at all."""
    for round_ in range(30):
        root = tmp_path / f"objects-{round_}"
        stores = [open_object_store(f"file://{root}", link_secret=b"x") for _ in range(6)]
        barrier = threading.Barrier(len(stores))
        seen: list[str] = []

        def claim(store: ObjectStore, barrier: threading.Barrier, seen: list[str]) -> None:
            barrier.wait()
            seen.append(store.claim("store-1"))

        threads = [threading.Thread(target=claim, args=(store, barrier, seen)) for store in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert seen == ["store-1"] * len(stores)


def test_an_empty_mark_left_by_a_torn_write_is_claimed(tmp_path: Path) -> None:
    root = tmp_path / "objects"
    store = open_object_store(f"file://{root}", link_secret=b"x")
    (root / ".reportexport-store").write_text("")
    assert store.claim("store-1") == "store-1"
    assert store.claim("store-2") == "store-1"
