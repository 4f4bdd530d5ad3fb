"""Drives every operation of an openapi-generator Python client of the token API against a live server.

Usage: drive_token_api.py <client dir> <base url> <json: {native, known, unknown, unpriced, snippets}>
Prints one JSON object: what the client returned (types and values) for each call, for the vitest test
(test/clients/token-api.test.ts) to compare with the data it seeded. Nothing is asserted here, so a
client that raises or mis-types shows up in the test's diff, not as a Python traceback alone. The plain-text
supply and the 304s go through the snippets of docs/clients.md (the directory `snippets` holds them as written
there); what the generated methods do without them is recorded too (`…Unaided`).
"""
import json
import sys

sys.path.insert(0, sys.argv[1])
import token_api_client  # noqa: E402
from token_api_client.rest import ApiException  # noqa: E402

base, args = sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, args["snippets"])
from token_client_snippets import fetch_if_changed, total_supply_text  # noqa: E402
config = token_api_client.Configuration(host=base)
# The client checks patterns and bounds itself; off, so the server's own 400s are what is exercised.
config.client_side_validation = False
api_client = token_api_client.ApiClient(config)
tokens = token_api_client.TokensApi(api_client)
supply = token_api_client.SupplyApi(api_client)
prices = token_api_client.PricesApi(api_client)
out = {}


def error(call):
    """Status, content type and decoded body of the ApiException a call raises (None when it does not)."""
    try:
        call()
    except ApiException as e:
        body = json.loads(e.body) if e.body else None
        return {"status": e.status, "type": (e.headers or {}).get("Content-Type"), "body": body}
    return None


def raised(call):
    """The exception a call raises, as "Type: message" (None when it returns)."""
    try:
        call()
    except Exception as e:  # noqa: BLE001 -- whatever the generated code raises is the finding
        return f"{type(e).__name__}: {e}"
    return None


def token(t):
    return {
        "cls": type(t).__name__, "address": t.contract_address, "name": t.name, "decimals": t.decimals,
        "price": t.current_price, "priceUpdatedAt": t.price_updated_at.isoformat() if t.price_updated_at else None,
        "infoCls": type(t.info).__name__, "totalSupply": t.info.total_supply, "swaps": t.info.swaps,
        "spam": t.is_possible_spam,
    }


def page(p):
    return {"cls": type(p).__name__, "data": [token(t) for t in p.data], "total": p.meta.total_items_count, "pages": p.meta.pages_count}


def points(lst):
    return [{"cls": type(p).__name__, "price": p.price, "timestamp": p.timestamp.isoformat()} for p in lst]


out["listSecure"] = page(tokens.list_tokens(is_secure=True))
out["listNotSecure"] = page(tokens.list_tokens(is_secure=False, order="symbol", sort="asc", limit=10))
out["listAddresses"] = page(tokens.list_tokens(addresses=",".join(args["known"])))
out["listBadLimit"] = error(lambda: tokens.list_tokens(limit=500))

data, status, headers = tokens.get_token_with_http_info(args["known"][0])
out["getToken"] = {"status": status, "token": token(data), "etag": headers.get("ETag")}
# A matching If-None-Match: the server answers 304; the generated client raises on any non-2xx status.
out["getToken304Unaided"] = error(lambda: tokens.get_token(args["known"][0], if_none_match=headers.get("ETag")))
first, etag = fetch_if_changed(tokens.get_token_with_http_info, args["known"][0])
again, etag_again = fetch_if_changed(tokens.get_token_with_http_info, args["known"][0], etag=etag, cached=first)
out["getTokenIfChanged"] = {"token": token(first), "etag": etag, "cachedKept": again is first, "etagAgain": etag_again}
out["getToken404"] = error(lambda: tokens.get_token(args["unknown"]))
out["getToken400"] = error(lambda: tokens.get_token("0x12"))

total = supply.get_total_supply(args["native"])
out["totalDefault"] = {"cls": type(total).__name__, "total": total.total_supply, "lastUpdated": total.last_updated.isoformat()}
total = supply.get_total_supply(args["native"], format="json")
out["totalJson"] = {"cls": type(total).__name__, "total": total.total_supply}
out["totalRawUnaided"] = raised(lambda: supply.get_total_supply(args["native"], format="raw"))
out["totalRaw"] = total_supply_text(supply, args["native"])
_, _, headers = supply.get_total_supply_with_http_info(args["native"])
out["total304Unaided"] = error(lambda: supply.get_total_supply(args["native"], if_none_match=headers.get("ETag")))
first, etag = fetch_if_changed(supply.get_total_supply_with_http_info, args["native"])
again, etag_again = fetch_if_changed(supply.get_total_supply_with_http_info, args["native"], etag=etag, cached=first)
out["totalIfChanged"] = {"total": first.total_supply, "etag": etag, "cachedKept": again is first, "etagAgain": etag_again}
out["total404"] = error(lambda: supply.get_total_supply(args["unknown"]))
circ = supply.get_circulating_supply(args["native"])
out["circulating"] = {
    "cls": type(circ).__name__, "circulating": circ.circulating_supply, "total": circ.total_supply,
    "wallets": [{"cls": type(w).__name__, "address": w.address, "label": w.label, "status": w.status, "balance": w.balance} for w in circ.excluded_wallets],
}
out["circulating400"] = error(lambda: supply.get_circulating_supply(args["native"], format="xml"))

out["tokenPrices"] = points(prices.get_token_prices(args["known"][0]))
out["tokenPrices404"] = error(lambda: prices.get_token_prices(args["unknown"]))
price_map = prices.get_prices(",".join(args["known"] + [args["unknown"]]))
out["prices"] = {k: points(v) for k, v in price_map.items()}
_, _, headers = prices.get_prices_with_http_info(args["known"][0])
out["prices304"] = error(lambda: prices.get_prices(args["known"][0], if_none_match=headers.get("ETag")))
out["prices400"] = error(lambda: prices.get_prices(args["known"][0] + ",0x12345"))

src = prices.get_token_price_sources(args["known"][0])
pool = lambda s: {
    "cls": type(s).__name__, "pool": s.pool, "kind": s.kind, "route": s.route, "weight": s.weight, "reason": s.reason,
    "blockNumber": s.block_number, "stateTime": s.state_time.isoformat() if s.state_time else None,
}
out["priceSources"] = {
    "cls": type(src).__name__, "basis": src.basis, "price": src.price, "confidence": src.confidence,
    "factorsCls": type(src.factors).__name__, "paramsCls": type(src.parameters).__name__,
    "sources": [pool(s) for s in src.sources], "excluded": [pool(s) for s in src.excluded],
}
none = prices.get_token_price_sources(args["unpriced"])
out["priceSourcesNone"] = {"basis": none.basis, "price": none.price, "confidence": none.confidence, "factors": none.factors}
out["priceSources404"] = error(lambda: prices.get_token_price_sources(args["unknown"]))
out["candles"] = [
    {"cls": type(c).__name__, "timestamp": c.timestamp.isoformat(), "open": c.open, "close": c.close, "twap": c.twap, "volumeUsd": c.volume_usd}
    for c in prices.get_token_candles(args["known"][0])
]
out["candles404"] = error(lambda: prices.get_token_candles(args["unknown"]))

print(json.dumps(out))
