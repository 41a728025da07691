#!/usr/bin/env python3
"""Guard against a check that cannot fail: after a conformance run, every
client scenario the suite itself lists for the requirement set (scored, or run
and reported; of the reported auth extensions, those CLAT implements) must have
run and produced at least one SUCCESS and no FAILURE or WARNING; the scenarios
named below must also have produced each of their expected check ids. The list comes from the suite
(`conformance list --client --requirements REVISION`, saved to LIST_FILE), so a
scenario added to the suite cannot pass unseen.

usage: check.py OUT_DIR REVISION LIST_FILE
"""
import json
import pathlib
import re
import sys

EXPECTED = {
    "2025-11-25": {
        "initialize": {"mcp-client-initialization": 1},
        "tools_call": {"tool-add-numbers": 1, "wire-schema-valid": 1},
        "elicitation-sep1034-client-defaults": {
            f"client-elicitation-sep1034-{kind}-default": 1
            for kind in ("string", "integer", "number", "enum", "boolean")
        },
        "sse-retry": {
            "client-sse-graceful-reconnect": 1,
            "client-sse-retry-timing": 1,
            "client-sse-last-event-id": 1,
        },
    },
    "2026-07-28": {
        "tools_call": {"tool-add-numbers": 1, "wire-schema-valid": 1},
        "request-metadata": {
            "sep-2575-http-client-sends-version-header": 1,
            "sep-2575-client-populates-meta": 1,
            "sep-2575-client-sends-client-info": 1,
            "sep-2575-http-version-header-matches-meta": 1,
            "sep-2575-client-declares-roots-capability": 1,
            "sep-2575-client-declares-sampling-capability": 1,
            "sep-2575-client-declares-elicitation-capability": 1,
            "sep-2575-client-retry-supported-version": 1,
        },
        "sep-2322-client-request-state": {
            "sep-2322-client-request-state-echoed": 1,
            "sep-2322-client-jsonrpc-id-different": 1,
            "sep-2322-client-no-state-omitted": 1,
            "sep-2322-client-parallel-isolation": 1,
            "sep-2322-default-result-type-complete": 1,
        },
        "http-standard-headers": {"sep-2243-client-includes-standard-headers": 9},
        "http-custom-headers": {
            "sep-2243-client-supports-custom-headers": 1,
            "sep-2243-client-mirrors-designated-params": 1,
            "sep-2243-client-encode-values": 1,
            "sep-2243-client-base64-unsafe": 1,
            "sep-2243-client-omit-null": 1,
        },
        "http-invalid-tool-headers": {"sep-2243-client-reject-invalid-tool": 1},
        "json-schema-ref-no-deref": {"sep-2106-no-network-ref-deref": 1},
    },
}


# The OAuth scenarios, in whichever requirement set lists them: the check that
# shows each did what it is about (a negative scenario's check is its refusal).
AUTH_EXPECTED = {
    **{
        f"auth/{name}": {"token-request": 1, "resource-parameter-in-token": 1, "resource-parameter-matches-prm": 1}
        for name in ("metadata-default", "metadata-var1", "metadata-var2", "metadata-var3")
    },
    "auth/basic-cimd": {"cimd-client-id-used": 1, "token-request": 1},
    "auth/scope-from-www-authenticate": {"scope-from-www-authenticate": 1},
    "auth/scope-from-scopes-supported": {"scope-from-scopes-supported": 1},
    "auth/scope-omitted-when-undefined": {"scope-omitted-when-undefined": 1},
    "auth/scope-step-up": {"scope-step-up-initial": 1, "scope-step-up-escalation": 1},
    "auth/scope-retry-limit": {"scope-retry-limit": 1},
    **{
        f"auth/token-endpoint-auth-{kind}": {"token-endpoint-auth-method": 1, "valid-bearer-token": 1}
        for kind in ("basic", "post", "none")
    },
    "auth/pre-registration": {"pre-registration-auth": 1},
    "auth/resource-mismatch": {"resource-mismatch-rejected": 1},
    "auth/offline-access-scope": {"sep-2207-offline-access-requested": 1},
    "auth/offline-access-not-supported": {"sep-2207-offline-access-not-requested": 1},
    "auth/authorization-server-migration": {
        "sep-2352-reregister-on-as-change": 1,
        "sep-2352-no-cross-as-credential-reuse": 1,
    },
    "auth/iss-supported": {"sep-2468-client-compare-iss-supported": 1},
    "auth/iss-not-advertised": {"sep-2468-client-proceed-no-iss": 1},
    "auth/iss-supported-missing": {"sep-2468-client-reject-missing-iss": 1},
    "auth/iss-wrong-issuer": {"sep-2468-client-compare-iss-supported": 1},
    "auth/iss-unexpected": {"sep-2468-client-compare-iss-unadvertised": 1},
    "auth/iss-normalized": {"sep-2468-client-no-normalization": 1},
    "auth/metadata-issuer-mismatch": {"sep-2468-client-validate-metadata-issuer": 1},
    # A reported (unscored) extension that CLAT implements: the client-credentials grant.
    "auth/client-credentials-basic": {"client-credentials-basic-auth": 1, "valid-bearer-token": 1},
}

# Reported auth extensions CLAT does not implement (private_key_jwt, DPoP,
# enterprise-managed authorization, workload identity): run, not required.
AUTH_NOT_IMPLEMENTED = {
    "auth/client-credentials-jwt",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/enterprise-managed-authorization",
    "auth/wif-jwt-bearer",
}


def suite_client_scenarios(list_file: pathlib.Path):
    """The client scenarios in the suite's listing of one requirement set, but
    the auth extensions CLAT does not implement."""
    scenarios, section = [], None
    for line in list_file.read_text().splitlines():
        if line.startswith("Client scenarios"):
            section = "client"
        elif line.startswith("Server scenarios"):
            section = "server"
        elif line.startswith("Run and reported"):
            section = "reported"
        match = re.match(r"^\s+- (\S+)(?: \[(\w+)\])?$", line)
        if not match:
            continue
        name, kind = match.group(1), match.group(2)
        client = section == "client" or (section == "reported" and kind == "client")
        if client and name not in AUTH_NOT_IMPLEMENTED:
            scenarios.append(name)
    return scenarios


def latest_checks(out: pathlib.Path, scenario: str):
    runs = sorted(out.glob(f"{scenario}-20*/checks.json"))
    return json.loads(runs[-1].read_text()) if runs else None


def main() -> int:
    out, revision, list_file = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])
    problems = []
    listed = suite_client_scenarios(list_file)
    if not listed:
        problems.append(f"no client scenarios could be read from the suite's listing {list_file}")
    for scenario in listed:
        if scenario not in EXPECTED[revision]:
            EXPECTED[revision][scenario] = AUTH_EXPECTED.get(scenario, {})
    for scenario in EXPECTED[revision]:
        if scenario not in listed:
            problems.append(f"{scenario}: expected here but the suite no longer lists it for {revision}")
    for scenario, wanted in EXPECTED[revision].items():
        checks = latest_checks(out, scenario)
        if checks is None:
            problems.append(f"{scenario}: no checks.json (the scenario did not run)")
            continue
        bad = [c for c in checks if c["status"] in ("FAILURE", "WARNING")]
        for c in bad:
            problems.append(f"{scenario}: {c['id']} {c['status']}: {c.get('errorMessage', '')}")
        for check_id, at_least in wanted.items():
            passed = sum(1 for c in checks if c["id"] == check_id and c["status"] == "SUCCESS")
            if passed < at_least:
                problems.append(f"{scenario}: {check_id} passed {passed} time(s), expected at least {at_least}")
        total = sum(1 for c in checks if c["status"] == "SUCCESS")
        if total == 0:
            problems.append(f"{scenario}: no check passed")
        print(f"{revision} {scenario}: {total} checks passed")
    for p in problems:
        print(f"conformance: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
