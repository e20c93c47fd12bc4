"""TIN validation: POST/GET /v1/tin-validations, the TIN check engine, and
RTTM_TIN_VALIDATION and ACCOUNT_OWNER_TIN_VALIDATION as a real subscribed
HTTPS receiver gets them (spec § Events → Event catalog).

The server of this module matches against a list file (--tin-match-file):
the statuses VALID, INVALID_FORMAT, MISMATCH and FOREIGN are each reached by
the input that should reach it. Tests that need a process of their own (the
GET before any worker ran, kill -9 while a check is claimed) start servers
on a shared database directory.
"""
import signal
import uuid

import pytest

from conftest import STOP_TIMEOUT_S, Server, poll, run_taxd
from eventsupport import (EventInbox, assert_iso_datetime, assert_uuid4, events_receiver,  # noqa: F401
                          WAIT_S)

MATCH_LIST = """\
# test match list: TIN_TYPE,TIN,NAME
SSN,123-45-6789,Jane Q Public
EIN,12-3456789,Acme Widgets, Inc.
ITIN,912-70-1234,Juan Perez

ATIN,912934567,Baby Doe
"""

# every clear TIN this module sends; none may reach taxd's log
CLEAR_TINS = ["123-45-6789", "123456789", "12-3456789", "912-70-1234", "912934567",
              "666-12-3456", "666123456", "234-56-7890", "234567890", "DE 123/456.78",
              "000-12-3456", "000123456", "345-67-8901", "345678901"]

RTTM_FIELDS = ["event_type", "event_id", "validation_id", "status", "validation_date"]
OWNER_FIELDS = ["event_type", "event_id", "account_owner_id", "account_owner_external_id",
                "status", "validation_date"]


@pytest.fixture(scope="module")
def match_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("match") / "tins.csv"
    path.write_text(MATCH_LIST)
    return path


@pytest.fixture(scope="module")
def srv(tmp_path_factory, taxd_bin, events_receiver, match_file):  # noqa: F811
    s = Server(tmp_path_factory.mktemp("srv"),
               args=("--webhook-ca-file", str(events_receiver.ca_pem),
                     "--tin-match-file", str(match_file))).start()
    yield s
    s.stop_and_check()


def post(tenant, body, **kw):
    return tenant.server.api().post("/v1/tin-validations", json=body, headers=tenant.auth(), **kw)


def get(tenant, vid):
    return tenant.get(f"/v1/tin-validations/{vid}")


def create(tenant, name, tin, tin_type, **extra):
    r = post(tenant, {"name": name, "tin": tin, "tin_type": tin_type, **extra})
    assert r.status_code == 202, r.text
    return r.json()["data"]


def owner_body(oid, **extra):
    body = {"id": oid, "name": "Jane Q Public", "account_owner_type": "individual"}
    body.update(extra)
    return body


def create_owner(tenant, body):
    r = tenant.server.api().post("/v1/account-owners", json=body, headers=tenant.auth())
    assert r.status_code == 201, r.text
    return r.json()["data"]


def patch_owner(tenant, oid, body):
    r = tenant.server.api().request("PATCH", f"/v1/account-owners/{oid}", json=body,
                                    headers=tenant.auth())
    assert r.status_code == 200, r.text
    return r.json()["data"]


def rttm_event(inbox):
    e = inbox.next()
    assert list(e) == RTTM_FIELDS, e  # required fields, no others, in the documented order
    assert e["event_type"] == "RTTM_TIN_VALIDATION"
    assert_uuid4(e["validation_id"])
    assert_iso_datetime(e["validation_date"])
    return e


def owner_event(inbox):
    e = inbox.next()
    assert list(e) == OWNER_FIELDS, e
    assert e["event_type"] == "ACCOUNT_OWNER_TIN_VALIDATION"
    assert_uuid4(e["account_owner_id"])
    assert_iso_datetime(e["validation_date"])
    return e


def owner_checks(server, owner_uuid):
    return server.sql("SELECT status FROM tin_checks WHERE subject_id = ? ORDER BY created_at", (owner_uuid,))


# ------------------------------------------------------------------ RTTM


def test_post_answers_202_pending_with_masked_tin(srv):
    t = srv.new_tenant("rttm-post")
    d = create(t, "Jane Q Public", "123-45-6789", "SSN")
    assert_uuid4(d["validation_id"])
    assert d["status"] == "PENDING" and d["validation_date"] is None
    assert d["tin"] == "*******6789" and d["tin_type"] == "SSN"
    assert d["name"] == "Jane Q Public" and d["account_owner_id"] is None


def test_rttm_event_valid_field_by_field_and_get_answers_the_result(srv, events_receiver):  # noqa: F811
    """RTTM_TIN_VALIDATION: validation_id (the POST's), status, validation_date
    (ISO 8601); the name is compared case-insensitively, whitespace collapsed."""
    t = srv.new_tenant("rttm-valid")
    inbox = EventInbox(srv, events_receiver, t, "RTTM_TIN_VALIDATION")
    d = create(t, "  jane   q PUBLIC ", "123456789", "SSN")
    e = rttm_event(inbox)
    assert e["validation_id"] == d["validation_id"] and e["status"] == "VALID"
    g = get(t, d["validation_id"])
    assert g.status_code == 200, g.text
    gd = g.json()["data"]
    assert gd["status"] == "VALID" and gd["validation_date"] == e["validation_date"]
    assert gd["tin"] == "*****6789"
    # any case of the id finds it
    assert get(t, d["validation_id"].upper()).json()["data"]["status"] == "VALID"


@pytest.mark.parametrize("name,tin,tin_type,status", [
    ("Acme Widgets, Inc.", "12-3456789", "EIN", "VALID"),
    ("Juan Perez", "912701234", "ITIN", "VALID"),
    ("Baby Doe", "912-93-4567", "ATIN", "VALID"),
    ("Jane Q Public", "666-12-3456", "SSN", "INVALID_FORMAT"),   # area 666
    ("Jane Q Public", "123-45-678", "SSN", "INVALID_FORMAT"),    # eight digits
    ("Acme", "07-3456789", "EIN", "INVALID_FORMAT"),             # not a campus prefix
    ("Juan Perez", "912-93-1234", "ITIN", "INVALID_FORMAT"),     # group 93 is the ATIN's
    ("Jane Q Public", "234-56-7890", "SSN", "MISMATCH"),         # not on the list
    ("John Public", "123-45-6789", "SSN", "MISMATCH"),           # another name
    ("Jane Q Public", "123-45-6789", "ITIN", "INVALID_FORMAT"),  # the type decides the rules
    ("Hans Muster", "DE 123/456.78", "FOREIGN", "FOREIGN"),
    ("Hans Muster", "DE#1", "FOREIGN", "INVALID_FORMAT"),
])
def test_rttm_statuses(srv, events_receiver, name, tin, tin_type, status):  # noqa: F811
    t = srv.new_tenant("rttm-status")
    inbox = EventInbox(srv, events_receiver, t, "RTTM_TIN_VALIDATION")
    d = create(t, name, tin, tin_type)
    e = rttm_event(inbox)
    assert (e["validation_id"], e["status"]) == (d["validation_id"], status)
    assert get(t, d["validation_id"]).json()["data"]["status"] == status


def test_post_with_account_owner(srv):
    t = srv.new_tenant("rttm-owner")
    create_owner(t, owner_body("o/1"))
    d = create(t, "Jane Q Public", "123-45-6789", "SSN", account_owner_id="o/1")
    assert d["account_owner_id"] == "o/1"
    assert get(t, d["validation_id"]).json()["data"]["account_owner_id"] == "o/1"
    r = post(t, {"name": "x", "tin": "123456789", "tin_type": "SSN", "account_owner_id": "nope"})
    assert r.status_code == 404, r.text
    assert r.json() == {"error": "Not Found", "message": "Account owner with id 'nope' not found"}


@pytest.mark.parametrize("body,path", [
    ({"tin": "123456789", "tin_type": "SSN"}, ["name"]),
    ({"name": "a", "tin_type": "SSN"}, ["tin"]),
    ({"name": "a", "tin": "123456789"}, ["tin_type"]),
    ({"name": "a", "tin": "123456789", "tin_type": "SIN"}, ["tin_type"]),
    ({"name": "a", "tin": 123456789, "tin_type": "SSN"}, ["tin"]),
    ({"name": "", "tin": "123456789", "tin_type": "SSN"}, ["name"]),
    ({"name": "a", "tin": "", "tin_type": "SSN"}, ["tin"]),
    ({"name": "a", "tin": "1" * 41, "tin_type": "SSN"}, ["tin"]),
    ({"name": "a", "tin": "é" * 21, "tin_type": "SSN"}, ["tin"]),  # 21 characters, 42 bytes
    ({"name": "a", "tin": "123\n456789", "tin_type": "SSN"}, ["tin"]),
    ({"name": "a\u0001b", "tin": "123456789", "tin_type": "SSN"}, ["name"]),
    ({"name": "a", "tin": "123456789", "tin_type": "SSN", "account_owner_id": ""},
     ["account_owner_id"]),
])
def test_post_400(srv, body, path):
    t = srv.new_tenant("rttm-400")
    r = post(t, body)
    assert r.status_code == 400, r.text
    j = r.json()
    assert j["error"] == "Bad Request" and j["message"] == "Invalid TIN validation"
    assert [i["path"] for i in j["issues"]] == [path], j
    if path == ["tin_type"] and "tin_type" in body:
        assert j["issues"][0]["values"] == ["SSN", "EIN", "ITIN", "ATIN", "FOREIGN"]
    tin = body.get("tin")
    if isinstance(tin, str) and len(tin) > 3:
        assert tin not in r.text  # the TIN is never quoted back


def test_post_400_not_json(srv):
    t = srv.new_tenant("rttm-400-json")
    r = t.server.api().post("/v1/tin-validations", data="{", headers={
        **t.auth(), "content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"] == "Bad Request"


def test_get_404_unknown_malformed_and_other_tenant(srv):
    a, b = srv.new_tenant("rttm-a"), srv.new_tenant("rttm-b")
    d = create(a, "Jane Q Public", "123-45-6789", "SSN")
    vid = d["validation_id"]
    for who, ident in ((a, str(uuid.uuid4())), (a, "not-a-uuid"), (b, vid)):
        r = get(who, ident)
        assert r.status_code == 404, r.text
        assert r.json() == {"error": "Not Found",
                            "message": f"TIN validation with id '{ident}' not found"}
    assert get(a, vid).status_code == 200


def test_scope_tax_documents_required(srv):
    t = srv.new_tenant("rttm-scope", scopes="accounts")
    r = post(t, {"name": "a", "tin": "123456789", "tin_type": "SSN"})
    assert r.status_code == 403
    t2 = srv.new_tenant("rttm-scope2", scopes="tax-documents")
    assert post(t2, {"name": "a", "tin": "123456789", "tin_type": "SSN"}).status_code == 202


def test_rttm_event_only_to_its_tenant(srv, events_receiver):  # noqa: F811
    a, b = srv.new_tenant("iso-a"), srv.new_tenant("iso-b")
    inbox_a = EventInbox(srv, events_receiver, a, "RTTM_TIN_VALIDATION")
    inbox_b = EventInbox(srv, events_receiver, b, "RTTM_TIN_VALIDATION")
    da = create(a, "Jane Q Public", "123-45-6789", "SSN")
    db_ = create(b, "Jane Q Public", "234-56-7890", "SSN")
    assert rttm_event(inbox_a)["validation_id"] == da["validation_id"]
    assert rttm_event(inbox_b)["validation_id"] == db_["validation_id"]
    assert len(inbox_a.events()) == 1 and len(inbox_b.events()) == 1


# ------------------------------------------------------------ account owners


def test_owner_created_with_tin_emits_account_owner_tin_validation(srv, events_receiver):  # noqa: F811
    t = srv.new_tenant("owner-create")
    inbox = EventInbox(srv, events_receiver, t, "ACCOUNT_OWNER_TIN_VALIDATION")
    o = create_owner(t, owner_body("cust-1", tin="123-45-6789", tin_type="SSN"))
    e = owner_event(inbox)
    assert e["account_owner_id"] == o["uuid"] and e["account_owner_external_id"] == "cust-1"
    assert e["status"] == "VALID"


def test_owner_without_tin_emits_nothing(srv, events_receiver):  # noqa: F811
    t = srv.new_tenant("owner-none")
    o = create_owner(t, owner_body("no-tin"))
    assert owner_checks(srv, o["uuid"]) == []


def test_owner_patch_statuses_and_no_event_without_tin_change(srv, events_receiver):  # noqa: F811
    """A PATCH that changes the TIN (or its type, or the name) validates it
    again; one that changes neither queues nothing."""
    t = srv.new_tenant("owner-patch")
    inbox = EventInbox(srv, events_receiver, t, "ACCOUNT_OWNER_TIN_VALIDATION")
    o = create_owner(t, owner_body("p-1", tin="234-56-7890", tin_type="SSN"))
    assert owner_event(inbox)["status"] == "MISMATCH"
    patch_owner(t, "p-1", {"email": "jane@example.com", "tin": "234-56-7890"})  # same TIN
    patch_owner(t, "p-1", {"tin": "000-12-3456"})
    e = owner_event(inbox)
    assert (e["account_owner_id"], e["status"]) == (o["uuid"], "INVALID_FORMAT")
    patch_owner(t, "p-1", {"tin": "123-45-6789", "name": "JANE Q PUBLIC"})
    assert owner_event(inbox)["status"] == "VALID"
    patch_owner(t, "p-1", {"name": "Somebody Else"})  # the name is part of the match
    assert owner_event(inbox)["status"] == "MISMATCH"
    # three PATCHes with a change, one without: four checks, all finished
    statuses = [s for (s,) in owner_checks(srv, o["uuid"])]
    assert statuses == ["MISMATCH", "INVALID_FORMAT", "VALID", "MISMATCH"], statuses
    assert len(inbox.events()) == 4


def test_superseded_and_removed_tins_never_speak(tmp_path, taxd_bin, events_receiver,  # noqa: F811
                                                 match_file):
    """Only the latest check of an owner is delivered: while no worker runs,
    one owner's TIN is changed (the first check is superseded) and another's
    is removed (its check retired); the worker started afterwards emits one
    event, for the changed TIN's latest value, and nothing for the other."""
    a = Server(tmp_path / "srv", args=("--no-workers",)).start()
    try:
        t = a.new_tenant("stale")
        inbox = EventInbox(a, events_receiver, t, "ACCOUNT_OWNER_TIN_VALIDATION")
        changed = create_owner(t, owner_body("changed", tin="234-56-7890", tin_type="SSN"))
        patch_owner(t, "changed", {"tin": "123-45-6789"})
        removed = create_owner(t, owner_body("removed", tin="123-45-6789", tin_type="SSN"))
        patch_owner(t, "removed", {"tin": None, "tin_type": None})
        assert owner_checks(a, changed["uuid"]) == [("STALE",), ("PENDING",)]
        assert owner_checks(a, removed["uuid"]) == [("STALE",)]
    finally:
        a.stop_and_check()
    b = Server(tmp_path / "srv", args=("--webhook-ca-file", str(events_receiver.ca_pem),
                                       "--tin-match-file", str(match_file))).start()
    try:
        t.server, t._token = b, None
        e = owner_event(inbox)
        assert (e["account_owner_id"], e["status"]) == (changed["uuid"], "VALID")
        # a marker event proves the queue was drained past the retired checks
        create_owner(t, owner_body("marker", tin="234-56-7890", tin_type="SSN"))
        assert owner_event(inbox)["account_owner_external_id"] == "marker"
        assert len(inbox.events()) == 2
        assert owner_checks(b, removed["uuid"]) == [("STALE",)]
    finally:
        b.stop_and_check()


# ------------------------------------------------------- other processes


def test_get_pending_then_result_from_a_later_worker(tmp_path, taxd_bin, match_file):
    """The check is queued in the POST's transaction: a process without
    workers answers PENDING; a worker started later on the same database
    finishes it, and the GET then answers the result."""
    a = Server(tmp_path / "srv", args=("--no-workers",)).start()
    try:
        t = a.new_tenant("pending")
        d = create(t, "Jane Q Public", "123-45-6789", "SSN")
        g = get(t, d["validation_id"]).json()["data"]
        assert g["status"] == "PENDING" and g["validation_date"] is None
    finally:
        a.stop_and_check()
    b = Server(tmp_path / "srv", args=("--tin-match-file", str(match_file))).start()
    try:
        t.server, t._token = b, None
        g = poll(lambda: (lambda x: x if x["status"] != "PENDING" else None)(
            get(t, d["validation_id"]).json()["data"]), WAIT_S, what="the check's result")
        assert g["status"] == "VALID"
        assert_iso_datetime(g["validation_date"])
    finally:
        b.stop_and_check()


def kill9(server):
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(timeout=STOP_TIMEOUT_S)
    server._err.close()


def test_kill9_while_checking_still_yields_the_event(tmp_path, taxd_bin, events_receiver,  # noqa: F811
                                                       match_file):
    """A worker killed -9 while it holds a check loses nothing: after the
    lease ends, the next process takes the check and the event arrives."""
    common = ("--webhook-ca-file", str(events_receiver.ca_pem), "--tin-match-file",
              str(match_file), "--tin-check-lease-ms", "1000")
    a = Server(tmp_path / "srv", args=("--test-hooks", "--tin-test-pause-ms", "600000",
                                       *common)).start()
    try:
        t = a.new_tenant("kill9")
        inbox = EventInbox(a, events_receiver, t, "RTTM_TIN_VALIDATION")
        d = create(t, "Jane Q Public", "123-45-6789", "SSN")
        poll(lambda: d["validation_id"] in a.stderr_text() and "tin check claimed" in a.stderr_text(),
             WAIT_S, what="the check claimed")
    finally:
        kill9(a)
    assert inbox.events() == []
    b = Server(tmp_path / "srv", args=common).start()
    try:
        e = rttm_event(inbox)
        assert (e["validation_id"], e["status"]) == (d["validation_id"], "VALID")
    finally:
        b.stop_and_check()


def test_malformed_match_file_stops_the_start_without_quoting_it(tmp_path, taxd_bin):
    bad = tmp_path / "tins.csv"
    bad.write_text("# ok\nSSN,123-45-6789,Jane\nSSN,666-45-6789,Jane\n")
    for command in ("serve", "worker"):
        p = run_taxd([command, "--listen", "127.0.0.1:0", "--db", str(tmp_path / "taxd.db"),
                      "--tin-match-file", str(bad)])
        assert p.returncode != 0
        assert "line 3: the TIN does not pass" in p.stderr, p.stderr
        assert "666-45" not in p.stderr and "123-45" not in p.stderr
    p = run_taxd(["serve", "--db", str(tmp_path / "taxd.db"), "--tin-match-file",
                  str(tmp_path / "missing.csv")])
    assert p.returncode != 0 and "cannot be opened" in p.stderr, p.stderr


# ------------------------------------------------------------------ logs


def test_no_tin_in_the_log(srv):
    """Runs last in this module: nothing this module sent as a TIN appears
    in taxd's stderr (access log, engine logs, errors)."""
    log = srv.stderr_text()
    assert "tin check claimed" in log  # the log was written
    for tin in CLEAR_TINS:
        assert tin not in log, f"a TIN reached the log: {tin[:2]}..."
