"""Drives every operation of an openapi-generator Python client of the relayer API against a live server.

Usage: drive_relayer_api.py <client dir> <base url> <json: {both, one, unknown, token, snippets}>
Prints one JSON object with what the client returned for each call; test/clients/relayer-api.test.ts
compares it with the messages it stored. Configurations come from the snippet of docs/clients.md (the directory
`snippets` holds it as written there); what an admin call does on a default Configuration is recorded too.
"""
import json
import sys

sys.path.insert(0, sys.argv[1])
import relayer_api_client  # noqa: E402
from relayer_api_client.rest import ApiException  # noqa: E402

base, args = sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, args["snippets"])
from relayer_client_snippets import relayer_configuration  # noqa: E402

config = relayer_configuration(base)
config.client_side_validation = False  # the server's own 400s are what is exercised
api_client = relayer_api_client.ApiClient(config)
apis = {name: getattr(relayer_api_client, name)(api_client) for name in dir(relayer_api_client) if name.endswith("Api") and name != "ApiClient"}
out = {"apis": sorted(apis)}


def op(name):
    """The bound method for an operation, whichever tag's Api class holds it."""
    for api in apis.values():
        if hasattr(api, name):
            return getattr(api, name)
    raise AttributeError(name)


def error(call):
    try:
        call()
    except ApiException as e:
        return {"status": e.status, "type": (e.headers or {}).get("Content-Type"), "body": json.loads(e.body) if e.body else None}
    return None


def record(m):
    return {
        "cls": type(m).__name__, "hash": m.message_hash, "direction": m.direction, "status": m.status, "fee": m.fee,
        "value": m.value, "nonce": m.message_nonce, "block": m.sent_block_number, "failureReason": m.failure_reason,
        "createdAt": m.created_at.isoformat(), "history": [{"cls": type(h).__name__, "status": h.status} for h in m.history],
    }


metrics = op("get_metrics")(_preload_content=False)
out["metrics"] = {"status": metrics.status, "type": metrics.getheader("Content-Type"), "text": metrics.data.decode()}
live = op("get_liveness")()
out["liveness"] = {"cls": type(live).__name__, "status": live.status}
ready = op("get_readiness")()
out["readiness"] = {"cls": type(ready).__name__, "status": ready.status, "checks": [{"cls": type(c).__name__, "name": c.name, "ok": c.ok} for c in ready.checks]}

out["one"] = record(op("get_message")(args["one"]))
out["bothL1"] = record(op("get_message")(args["both"], direction="L1_TO_L2"))
out["both409"] = error(lambda: op("get_message")(args["both"]))
out["unknown404"] = error(lambda: op("get_message")(args["unknown"]))
out["bad400"] = error(lambda: op("get_message")("0x12"))

page = op("list_messages")()
out["list"] = {"cls": type(page).__name__, "hashes": [m.message_hash + "/" + m.direction for m in page.data], "total": page.meta.total_items_count}
page = op("list_messages")(status="EXCLUDED", direction="L2_TO_L1", page=1, limit=10)
out["listFiltered"] = {"records": [record(m) for m in page.data], "total": page.meta.total_items_count, "pages": page.meta.pages_count}
out["listBadLimit"] = error(lambda: op("list_messages")(limit=500))
out["listBadStatus"] = error(lambda: op("list_messages")(status="NOPE"))

h = op("get_message_history")(args["one"])
out["history"] = {"cls": type(h).__name__, "status": h.status, "lines": [{"cls": type(e).__name__, "from": getattr(e, "_from", None), "to": e.to} for e in h.history]}
out["retry401"] = error(lambda: op("retry_message")(args["one"]))
# The bearer token through the generated client's own security handling (access_token).
admin_client = relayer_api_client.ApiClient(relayer_configuration(base, args["token"]))
admin_apis = [getattr(relayer_api_client, name)(admin_client) for name in apis]
default_client = relayer_api_client.ApiClient(relayer_api_client.Configuration(host=base))
default_retry = next(getattr(getattr(relayer_api_client, name)(default_client), "retry_message") for name in apis if hasattr(getattr(relayer_api_client, name), "retry_message"))
try:
    default_retry(args["one"])
    out["retryDefaultConfiguration"] = None
except Exception as e:  # noqa: BLE001 -- whatever the generated code raises is the finding
    out["retryDefaultConfiguration"] = f"{type(e).__name__}: {e}"


def admin_op(name):
    return next(getattr(api, name) for api in admin_apis if hasattr(api, name))


r = admin_op("retry_message")(args["both"], direction="L1_TO_L2")
out["retrySame"] = {"cls": type(r).__name__, "action": r.action, "changed": r.changed, "status": r.message.status}
out["abandon409"] = error(lambda: admin_op("abandon_message")(args["one"]))

print(json.dumps(out))
