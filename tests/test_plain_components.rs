//! Any WebAssembly component as a plugin: components written as outside
//! authors write them (their own WIT; wit-bindgen, componentize-js,
//! componentize-py; no CLAT contract), built from source with the pinned
//! toolchains, installed from a directory, from a
//! bare `.wasm` and from a loopback OCI registry (pushed by clat with their
//! WIT, or as `wkg` publishes a component, with no manifest); listed with the schemas
//! derived from their WIT types; called through `clat call` and through `clat
//! serve` by the official Python SDK's client; denied and approved by the
//! pipeline like any tool; refused at install when they import what CLAT does
//! not give.

mod support;

use std::path::{Path, PathBuf};

use clat_guest_artifacts as guests;
use clat_host::limits::{COMPONENT_VALUE_PARTS_MAX, PLAIN_WIT_MAX_BYTES};
use serde_json::{Value, json};
use support::http_server::{HttpServer, JSON_DOCUMENT};
use support::oci_registry::OciRegistry;
use support::{TestEnv, stderr, stdout};

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_str(stdout(out).trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(out), stderr(out)))
}

/// `clat call --json TOOL ARGS` in `mode`: its exit code and its JSON answer.
fn call(env: &TestEnv, mode: &str, tool: &str, arguments: Value) -> (i32, Value) {
    let out = env.clat(&["call", "--json", "--mode", mode, tool, &arguments.to_string()]);
    (out.status.code().unwrap_or(-1), json_of(&out))
}

/// The registered tools of the project, by name, as `clat tools --json` lists them.
fn tools(env: &TestEnv) -> serde_json::Map<String, Value> {
    let listed = json_of(&env.clat(&["tools", "--json"]));
    let list = listed.as_array().cloned().or_else(|| listed["tools"].as_array().cloned()).unwrap();
    list.into_iter().map(|t| (t["name"].as_str().unwrap().to_string(), t)).collect()
}

fn install(env: &TestEnv, what: &str) -> Value {
    let out = env.clat(&["plugin", "install", what, "--json"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    json_of(&out)
}

#[test]
fn a_plain_component_is_listed_with_the_schemas_its_wit_types_give() {
    let env = TestEnv::trusted();
    let installed = install(&env, guests::CALCULATOR_PACKAGE);
    assert_eq!(installed["kind"], "component", "{installed}");
    let not_offered = installed["not_offered"].as_array().unwrap();
    assert_eq!(not_offered.len(), 3, "the resource's constructor and method, and the function returning one");
    assert!(not_offered.iter().all(|why| why.as_str().unwrap().contains("resource")), "{installed}");
    assert!(not_offered[2].as_str().unwrap().starts_with("tally (in example:calculator/math@0.1.0)"), "{installed}");

    let tools = tools(&env);
    let schema = |tool: &str| tools[tool]["input_schema"].clone();
    let object = |properties: Value, required: Value| json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false });
    let float = json!({ "anyOf": [{ "type": "number" }, { "enum": ["NaN", "Infinity", "-Infinity"] }] });
    let int = |min: i128, max: i128| json!({ "type": "integer", "minimum": min, "maximum": max });
    let point = object(json!({ "x": float, "y": float }), json!(["x", "y"]));
    // Numbers with their ranges; a record's fields; an option absent from `required`.
    assert_eq!(
        schema("wasm_calculator_add"),
        object(json!({ "a": int(-2147483648, 2147483647), "b": int(-2147483648, 2147483647) }), json!(["a", "b"]))
    );
    assert_eq!(
        schema("wasm_calculator_distance"),
        object(json!({ "from": point, "to": point }), json!(["from", "to"]))
    );
    assert_eq!(
        schema("wasm_calculator_greet"),
        object(
            json!({ "name": { "type": "string" }, "times": { "anyOf": [{ "type": "null" }, int(0, 255)] } }),
            json!(["name"])
        )
    );
    // A variant: its bare cases by name, each other case an object of one key.
    let tagged = |name: &str, value: Value| object(json!({ name: value }), json!([name]));
    let pair = json!({ "type": "array", "prefixItems": [float, float], "items": false, "minItems": 2, "maxItems": 2 });
    assert_eq!(
        schema("wasm_calculator_area")["properties"]["shape"],
        json!({ "oneOf": [{ "type": "string", "enum": ["dot"] }, tagged("circle", float.clone()), tagged("rectangle", pair)] })
    );
    assert_eq!(
        schema("wasm_calculator_round")["properties"]["mode"],
        json!({ "type": "string", "enum": ["down", "nearest", "up"] })
    );
    let describe = schema("wasm_calculator_describe");
    assert_eq!(
        describe["properties"]["style"],
        json!({ "type": "array", "items": { "enum": ["bold", "italic", "underline"] }, "uniqueItems": true })
    );
    assert_eq!(describe["properties"]["marker"], json!({ "type": "string", "minLength": 1, "maxLength": 1 }));
    assert_eq!(
        schema("wasm_calculator_swap")["properties"]["pair"]["prefixItems"],
        json!([{ "type": "string" }, int(0, 18446744073709551615)])
    );
    // The output: the returned value under "result" (an option of a record: null or the record).
    let summary = object(
        json!({ "count": int(0, 4294967295), "mean": float, "smallest": float, "largest": float }),
        json!(["count", "mean", "smallest", "largest"]),
    );
    assert_eq!(
        tools["wasm_calculator_stats"]["output_schema"],
        object(json!({ "result": { "anyOf": [{ "type": "null" }, summary] } }), json!(["result"]))
    );
    assert!(tools["wasm_calculator_check"].get("output_schema").is_none(), "result<_, string> gives back nothing");
    // Descriptions: the WIT doc comment and the signature; the manifest's where it gives one.
    let description = |tool: &str| tools[tool]["description"].as_str().unwrap().to_string();
    assert_eq!(description("wasm_calculator_add"), "Add two whole numbers.\n\nadd(a: s32, b: s32) -> s32");
    assert!(description("wasm_calculator_greet").starts_with("Say hello to someone"), "world-level docs");
    assert_eq!(
        description("wasm_calculator_check"),
        "Check that a value is within a limit; a value past it is an error."
    );
    // Effects: external-read, unless the manifest raises it.
    assert_eq!(tools["wasm_calculator_add"]["effect"], "external-read");
    assert_eq!(tools["wasm_calculator_check"]["effect"], "write");
    // Two exports named `greet`: the interface's is qualified by its interface.
    assert!(
        tools["wasm_calculator_math_greet"]["description"]
            .as_str()
            .unwrap()
            .starts_with("Greet in the calculator's own words")
    );
    assert!(!tools.contains_key("wasm_calculator_tally"), "a function returning a resource is not offered");
}

#[test]
fn a_plain_components_functions_are_called_with_json_values() {
    let env = TestEnv::trusted();
    install(&env, guests::CALCULATOR_PACKAGE);
    let ok = |tool: &str, arguments: Value| {
        let (code, answer) = call(&env, "ask", tool, arguments);
        assert_eq!(code, 0, "{tool}: {answer}");
        assert_eq!(answer["isError"], false, "{tool}: {answer}");
        answer
    };
    let result = |tool: &str, arguments: Value| ok(tool, arguments)["structuredContent"]["result"].clone();
    assert_eq!(result("wasm_calculator_add", json!({ "a": 2, "b": 40 })), json!(42));
    assert_eq!(ok("wasm_calculator_add", json!({ "a": 2, "b": 40 }))["content"][0]["text"], "42");
    assert_eq!(
        result("wasm_calculator_distance", json!({ "from": { "x": 0, "y": 0 }, "to": { "x": 3, "y": 4 } })),
        json!(5.0)
    );
    assert_eq!(result("wasm_calculator_area", json!({ "shape": { "rectangle": [2, 3] } })), json!(6.0));
    assert_eq!(result("wasm_calculator_area", json!({ "shape": "dot" })), json!(0.0));
    assert_eq!(result("wasm_calculator_round", json!({ "value": 2.5, "mode": "up" })), json!(3));
    let styled = json!({ "text": "hi", "style": ["bold", "underline"], "marker": "*" });
    assert_eq!(result("wasm_calculator_describe", styled), json!("* hi (bold and underlined)"));
    assert_eq!(
        ok("wasm_calculator_describe", json!({ "text": "hi", "style": [], "marker": "-" }))["content"][0]["text"],
        "- hi (plain)"
    );
    assert_eq!(
        result("wasm_calculator_stats", json!({ "values": [1, 2, 3.5] })),
        json!({ "count": 3, "mean": 6.5 / 3.0, "smallest": 1.0, "largest": 3.5 })
    );
    assert_eq!(result("wasm_calculator_stats", json!({ "values": [] })), Value::Null, "none is null");
    assert_eq!(result("wasm_calculator_swap", json!({ "pair": ["x", u64::MAX] })), json!([u64::MAX, "x"]));
    assert_eq!(
        result("wasm_calculator_greet", json!({ "name": "Ada" })),
        json!("Hello, Ada!"),
        "an absent option is none"
    );
    assert_eq!(result("wasm_calculator_greet", json!({ "name": "Ada", "times": 2 })), json!("Hello, Ada! Hello, Ada!"));
    assert_eq!(result("wasm_calculator_math_greet", json!({ "name": "Ada" })), json!("Ada, the answer is 42."));
    assert_eq!(result("wasm_calculator_divide", json!({ "a": 1, "b": 4 })), json!(0.25), "a result's ok side");
    // A result's err side is the tool's error, carrying it.
    let (code, answer) = call(&env, "ask", "wasm_calculator_divide", json!({ "a": 1, "b": 0 }));
    assert_eq!((code, &answer["isError"]), (1, &json!(true)), "{answer}");
    assert_eq!(answer["content"][0]["text"], "cannot divide 1 by zero");
    assert!(answer.get("structuredContent").is_none(), "{answer}");
    // Arguments are checked against the derived schema before anything runs.
    let (code, answer) = call(&env, "ask", "wasm_calculator_add", json!({ "a": 2147483648i64, "b": 1 }));
    assert_eq!(code, 2, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("maximum of 2147483647"), "{answer}");
    let (code, answer) = call(&env, "ask", "wasm_calculator_round", json!({ "value": 1, "mode": "sideways" }));
    assert_eq!(code, 2, "{answer}");
    let (code, answer) =
        call(&env, "ask", "wasm_calculator_describe", json!({ "text": "t", "style": [], "marker": "ab" }));
    assert_eq!(code, 2, "a char is one character: {answer}");
}

#[test]
fn a_returned_value_past_the_parts_limit_fails_clearly() {
    let env = TestEnv::trusted();
    install(&env, guests::CALCULATOR_PACKAGE);
    let (code, answer) = call(&env, "ask", "wasm_calculator_range", json!({ "count": 1000 }));
    assert_eq!(code, 0, "{answer}");
    assert_eq!(answer["structuredContent"]["result"].as_array().unwrap().len(), 1000);
    // The list and its items are COMPONENT_VALUE_PARTS_MAX + 1 parts.
    let (code, answer) = call(&env, "ask", "wasm_calculator_range", json!({ "count": COMPONENT_VALUE_PARTS_MAX }));
    assert_ne!(code, 0, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("more than {COMPONENT_VALUE_PARTS_MAX} parts")) && message.contains("range"),
        "{message}"
    );
    // The plugin is unharmed.
    assert_eq!(call(&env, "ask", "wasm_calculator_add", json!({ "a": 1, "b": 1 })).1["structuredContent"]["result"], 2);
}

#[test]
fn the_pipeline_denies_and_allows_a_plain_components_tools_by_their_effect() {
    let env = TestEnv::trusted();
    install(&env, guests::CALCULATOR_PACKAGE);
    let check = json!({ "value": 5, "limit": 3, "strict": false });
    // `check` is write by its manifest: denied in read-only, asked in ask (no terminal here: denied), allowed in
    // auto-edit — where its result's err side comes back as the tool's error.
    let (code, answer) = call(&env, "read-only", "wasm_calculator_check", check.clone());
    assert_eq!(code, 4, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("read-only"), "{answer}");
    let (code, answer) = call(&env, "ask", "wasm_calculator_check", check.clone());
    assert_eq!(code, 4, "{answer}");
    let (code, answer) = call(&env, "auto-edit", "wasm_calculator_check", check);
    assert_eq!((code, &answer["content"][0]["text"]), (1, &json!("5 is past the limit 3")), "{answer}");
    let (code, answer) = call(&env, "auto-edit", "wasm_calculator_check", json!({ "value": 1, "strict": true }));
    assert_eq!((code, &answer["content"][0]["text"]), (0, &json!("ok")), "{answer}");
    // External-read: allowed even in read-only.
    let (code, answer) = call(&env, "read-only", "wasm_calculator_add", json!({ "a": 1, "b": 2 }));
    assert_eq!(code, 0, "{answer}");
}

/// A copy of the calculator's package (manifest, component, WIT) in the directory `dir` of the test.
fn calculator_copy(env: &TestEnv, dir: &str) -> PathBuf {
    let package = env.dir.path().join(dir);
    std::fs::create_dir_all(package.join("wit")).unwrap();
    for file in ["clat-plugin.toml", "calculator.wasm", "wit/calculator.wit"] {
        std::fs::copy(Path::new(guests::CALCULATOR_PACKAGE).join(file), package.join(file)).unwrap();
    }
    package
}

#[test]
fn a_kept_approval_does_not_carry_over_to_a_new_artifact_with_changed_definitions() {
    let env = TestEnv::trusted();
    let package = calculator_copy(&env, "calculator");
    install(&env, package.to_str().unwrap());
    let check = json!({ "value": 1, "limit": 2, "strict": false });
    let allow = env.clat(&["approvals", "allow", "wasm_calculator_check"]);
    assert!(allow.status.success(), "{}", stderr(&allow));
    assert_eq!(call(&env, "ask", "wasm_calculator_check", check.clone()).0, 0, "kept: allowed without a prompt");
    // A new artifact from the same place whose `check` is defined otherwise (its description changed): asked again.
    let manifest = std::fs::read_to_string(package.join("clat-plugin.toml")).unwrap();
    std::fs::write(package.join("clat-plugin.toml"), manifest.replace("a value past it is an error.", "now it logs."))
        .unwrap();
    install(&env, package.to_str().unwrap());
    assert!(tools(&env)["wasm_calculator_check"]["description"].as_str().unwrap().contains("now it logs"));
    let (code, answer) = call(&env, "ask", "wasm_calculator_check", check);
    assert_eq!(code, 4, "asked again, and headless nobody answers: {answer}");
}

#[test]
fn clocks_and_random_reach_a_plain_component() {
    let env = TestEnv::trusted();
    install(&env, guests::CLOCK_TOOL_PACKAGE);
    let (code, answer) = call(&env, "ask", "wasm_clock_tool_now", json!({}));
    assert_eq!(code, 0, "{answer}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let seconds = answer["structuredContent"]["result"]["seconds"].as_u64().unwrap();
    assert!(seconds.abs_diff(now) < 300, "the guest's wall clock is the host's: {seconds} vs {now}");
    let (_, answer) = call(&env, "ask", "wasm_clock_tool_uuids", json!({ "count": 3 }));
    let uuids: Vec<String> = serde_json::from_value(answer["structuredContent"]["result"].clone()).unwrap();
    let unique: std::collections::HashSet<&String> = uuids.iter().collect();
    assert_eq!(unique.len(), 3, "random: {uuids:?}");
    assert!(uuids.iter().all(|u| u.len() == 36 && u.as_bytes()[14] == b'4'), "version 4: {uuids:?}");
    let (code, answer) = call(&env, "ask", "wasm_clock_tool_uuids", json!({ "count": 101 }));
    assert_eq!((code, &answer["content"][0]["text"]), (1, &json!("101 is more than 100")), "{answer}");
    let (code, answer) = call(&env, "ask", "wasm_clock_tool_measure", json!({ "rounds": 100000 }));
    assert_eq!(code, 0, "{answer}");
    assert!(answer["structuredContent"]["result"].as_u64().unwrap() > 0, "the monotonic clock moves: {answer}");
}

#[test]
fn a_plain_component_reaches_the_network_only_within_its_grant() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    // Its manifest asks for http; headless, nothing is granted without --grant.
    let out = env.clat(&["plugin", "install", guests::WEB_FETCH_PACKAGE]);
    assert!(!out.status.success() && stderr(&out).contains("--grant"), "{}", stderr(&out));
    let out = env.clat(&["plugin", "install", guests::WEB_FETCH_PACKAGE, "--grant", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let installed = json_of(&out);
    assert!(installed["imports"].to_string().contains("wasi:http/outgoing-handler@0.2."), "{installed}");
    // Only `get` uses the grant ([tools.get] uses = ["http"]): it is network, `length` stays external-read.
    let tools = tools(&env);
    assert_eq!(
        (tools["wasm_web_fetch_get"]["effect"].as_str(), tools["wasm_web_fetch_length"]["effect"].as_str()),
        (Some("network"), Some("external-read"))
    );
    let (code, answer) = call(&env, "full-access", "wasm_web_fetch_get", json!({ "url": server.url("/json") }));
    assert_eq!(code, 0, "{answer}");
    let page = &answer["structuredContent"]["result"];
    assert_eq!((page["status"].as_u64(), page["body"].as_str()), (Some(200), Some(JSON_DOCUMENT)), "{answer}");
    // Outside the grant (another host name for the same server): the request is refused, the tool says so.
    let elsewhere = server.url("/json").replace("127.0.0.1", "localhost");
    let (code, answer) = call(&env, "full-access", "wasm_web_fetch_get", json!({ "url": elsewhere }));
    assert_eq!((code, &answer["isError"]), (1, &json!(true)), "{answer}");
    assert!(answer["content"][0]["text"].as_str().unwrap().contains("HttpRequestDenied"), "{answer}");
    assert_eq!(server.requests().len(), 1, "the refused request never left");
    // Network asks in read-only, and headless nobody answers; the function without the grant runs.
    let (code, _) = call(&env, "read-only", "wasm_web_fetch_get", json!({ "url": server.url("/json") }));
    assert_eq!(code, 4);
    let (code, answer) = call(&env, "read-only", "wasm_web_fetch_length", json!({ "text": "héllo" }));
    assert_eq!((code, &answer["structuredContent"]["result"]), (0, &json!(5)), "{answer}");
}

#[test]
fn a_manifest_raises_a_functions_effect_but_never_below_what_its_grant_implies() {
    let env = TestEnv::trusted();
    let package = env.dir.path().join("web-fetch");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::copy(Path::new(guests::WEB_FETCH_PACKAGE).join("web_fetch.wasm"), package.join("web_fetch.wasm")).unwrap();
    let manifest = std::fs::read_to_string(Path::new(guests::WEB_FETCH_PACKAGE).join("clat-plugin.toml")).unwrap();
    let manifest = manifest.replace("uses = [\"http\"]", "uses = [\"http\"]\neffect = \"external-read\"")
        + "\n[tools.length]\neffect = \"destructive\"\n";
    std::fs::write(package.join("clat-plugin.toml"), manifest).unwrap();
    assert!(env.clat(&["plugin", "install", package.to_str().unwrap(), "--grant"]).status.success());
    let tools = tools(&env);
    assert_eq!(tools["wasm_web_fetch_get"]["effect"], "network", "it uses the http grant: not lowered");
    assert_eq!(tools["wasm_web_fetch_length"]["effect"], "destructive", "raised as the manifest says");
}

#[test]
fn a_component_importing_what_clat_does_not_give_is_refused_at_install() {
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", guests::HOST_LOGGER_PACKAGE]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("it imports what CLAT does not give a plain component: example:host/logger@0.1.0"), "{err}");
    assert!(err.contains("WASI 0.2"), "{err}");
    let list = env.clat(&["plugin", "list"]);
    assert_eq!(stdout(&list).trim(), "no plugins installed");
    // A WASI command exports only how a host runs it: no function of its own to offer.
    let command = bare_copy(&env, guests::NOT_A_PLUGIN_WASM, "command", false);
    let out = env.clat(&["plugin", "install", command.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("exports no function CLAT can offer as a tool (wasi:cli/run@0.2."),
        "{}",
        stderr(&out)
    );
}

/// A copy of `component` alone in a directory of the test, with the calculator's WIT beside it when `with_wit`.
fn bare_copy(env: &TestEnv, component: &str, dir: &str, with_wit: bool) -> PathBuf {
    let dir = env.dir.path().join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(Path::new(component).file_name().unwrap());
    std::fs::copy(component, &file).unwrap();
    if with_wit {
        std::fs::create_dir_all(dir.join("wit")).unwrap();
        let wit = Path::new(guests::CALCULATOR_PACKAGE).join("wit/calculator.wit");
        std::fs::copy(wit, dir.join("wit/calculator.wit")).unwrap();
    }
    file
}

#[test]
fn a_component_with_no_manifest_installs_from_its_file_or_its_directory() {
    let env = TestEnv::trusted();
    let file = bare_copy(&env, guests::CALCULATOR_WASM, "bare", true);
    let installed = install(&env, file.to_str().unwrap());
    assert_eq!((installed["installed"].as_str(), installed["kind"].as_str()), (Some("calculator"), Some("component")));
    assert_eq!(installed["origin"], json!(file.canonicalize().unwrap().display().to_string()), "{installed}");
    let tools = tools(&env);
    assert!(
        tools["wasm_calculator_add"]["description"].as_str().unwrap().starts_with("Add two whole numbers."),
        "the WIT beside it"
    );
    assert_eq!(call(&env, "ask", "wasm_calculator_add", json!({ "a": 1, "b": 2 })).1["structuredContent"]["result"], 3);
    // Its directory names it too, and is the same origin's plugin: reinstalled, not refused as another's.
    install(&env, file.parent().unwrap().to_str().unwrap());
    // A WIT past its bound is refused, naming it.
    let big = file.parent().unwrap().join("wit/big.wit");
    std::fs::write(&big, format!("// {}\n", "x".repeat(PLAIN_WIT_MAX_BYTES as usize))).unwrap();
    let out = env.clat(&["plugin", "install", file.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains(&format!("more than {PLAIN_WIT_MAX_BYTES} bytes of WIT")), "{}", stderr(&out));
    // A contract guest with no manifest is recognized by its export.
    let hello = bare_copy(&env, guests::HELLO_WASM, "hello-bare", false);
    let installed = install(&env, hello.to_str().unwrap());
    assert_eq!(installed["kind"], "wasm", "{installed}");
}

#[test]
fn a_packages_wit_past_its_bound_gives_no_descriptions_and_says_why() {
    let env = TestEnv::trusted();
    let package = calculator_copy(&env, "calculator-big-wit");
    std::fs::write(package.join("wit/big.wit"), format!("// {}\n", "x".repeat(PLAIN_WIT_MAX_BYTES as usize))).unwrap();
    install(&env, package.to_str().unwrap());
    let tools = tools(&env);
    assert_eq!(
        tools["wasm_calculator_add"]["description"],
        "add(a: s32, b: s32) -> s32 (a function of the component calculator)",
        "the signature, when the WIT gives nothing"
    );
    // `clat tools` names the extensions' problems on stderr.
    let listed = stderr(&env.clat(&["tools"]));
    assert!(listed.contains(&format!("more than {PLAIN_WIT_MAX_BYTES} bytes of WIT")), "{listed}");
}

/// The text-tools component in `lang` (`js`, `python`), built by `clat plugin build` with the pinned toolchain.
fn text_tools(lang: &str) -> PathBuf {
    support::toolchains::package(lang, "text-tools")
}

#[test]
fn components_written_in_javascript_and_python_are_plugins_too() {
    let env = TestEnv::trusted();
    for (lang, plugin) in [("js", "text_tools_js"), ("python", "text_tools_py")] {
        let installed = install(&env, text_tools(lang).to_str().unwrap());
        let tools: Vec<String> = serde_json::from_value(installed["tools"].clone()).unwrap();
        let names = ["stats", "recase", "find", "split"].map(|f| format!("wasm_{plugin}_{f}"));
        assert_eq!(tools, names, "its four functions, and nothing of its toolchain's: {installed}");
        let listed = self::tools(&env);
        let find = &listed[&names[2]];
        assert_eq!(
            find["description"].as_str().unwrap().lines().next(),
            Some("Where a pattern occurs, as start and end offsets, at most limit of them (all when not said).")
        );
        assert_eq!(find["input_schema"]["required"], json!(["text", "pattern"]), "{find}");
        let result = |tool: &str, arguments: Value| {
            let (code, answer) = call(&env, "ask", &format!("wasm_{plugin}_{tool}"), arguments);
            assert_eq!(code, 0, "{lang} {tool}: {answer}");
            answer["structuredContent"]["result"].clone()
        };
        assert_eq!(
            result("stats", json!({ "text": "one two three\nfour" })),
            json!({ "words": 4, "lines": 2, "longest": "three" }),
            "{lang}"
        );
        assert_eq!(result("stats", json!({ "text": "" }))["longest"], Value::Null, "{lang}");
        assert_eq!(result("recase", json!({ "text": "hello big world", "style": "title" })), json!("Hello Big World"));
        assert_eq!(
            result("find", json!({ "text": "a1b22c", "pattern": "any-digit", "limit": 2 })),
            json!([[1, 2], [3, 4]])
        );
        assert_eq!(
            result("find", json!({ "text": "abcabc", "pattern": { "literal": "bc" } })),
            json!([[1, 3], [4, 6]])
        );
        assert_eq!(
            result("find", json!({ "text": "abc", "pattern": { "any-of": ["a", "c"] } })),
            json!([[0, 1], [2, 3]])
        );
        let split = json!({ "text": " a , b ", "separator": ",", "trim": ["start", "end"] });
        assert_eq!(result("split", split), json!(["a", "b"]), "{lang}");
        let (code, answer) =
            call(&env, "ask", &format!("wasm_{plugin}_split"), json!({ "text": "x", "separator": "", "trim": [] }));
        assert_eq!((code, &answer["content"][0]["text"]), (1, &json!("the separator is empty")), "{lang}: {answer}");
    }
}

#[test]
fn plain_components_install_from_an_oci_registry() {
    let registry = OciRegistry::start();
    let env = TestEnv::trusted();
    for (package, tool) in
        [(text_tools("js"), "wasm_text_tools_js_recase"), (text_tools("python"), "wasm_text_tools_py_recase")]
    {
        let tag = registry
            .reference(&format!("clat/{}:0.1.0", package.parent().unwrap().file_name().unwrap().to_string_lossy()));
        assert!(env.clat(&["plugin", "push", package.to_str().unwrap(), &tag]).status.success(), "{tag}");
        install(&env, &tag);
        let (code, answer) = call(&env, "ask", tool, json!({ "text": "oci", "style": "upper" }));
        assert_eq!((code, &answer["structuredContent"]["result"]), (0, &json!("OCI")), "{answer}");
    }
    // Reaching clocks and random, and the network under a grant asked for again at the registry's install.
    let tag = registry.reference("clat/clock-tool:0.2.0");
    assert!(env.clat(&["plugin", "push", guests::CLOCK_TOOL_PACKAGE, &tag]).status.success());
    install(&env, &tag);
    assert_eq!(
        call(&env, "ask", "wasm_clock_tool_uuids", json!({ "count": 2 })).1["structuredContent"]["result"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    let tag = registry.reference("clat/web-fetch:0.1.0");
    assert!(env.clat(&["plugin", "push", guests::WEB_FETCH_PACKAGE, &tag]).status.success());
    assert!(
        !env.clat(&["plugin", "install", &tag]).status.success(),
        "headless, its http is not granted without --grant"
    );
    assert!(env.clat(&["plugin", "install", &tag, "--grant"]).status.success());
    assert_eq!(tools(&env)["wasm_web_fetch_get"]["effect"], "network");
    let tag = registry.reference("clat/calculator:0.1.0");
    let pushed = json_of(&env.clat(&["plugin", "push", guests::CALCULATOR_PACKAGE, &tag, "--json"]));
    assert!(pushed["tools"].as_array().unwrap().contains(&json!("add")), "{pushed}");
    let installed = install(&env, &tag);
    assert_eq!((installed["installed"].as_str(), installed["kind"].as_str()), (Some("calculator"), Some("component")));
    assert_eq!(
        call(&env, "ask", "wasm_calculator_add", json!({ "a": 20, "b": 22 })).1["structuredContent"]["result"],
        42
    );
    let tools = tools(&env);
    assert_eq!(tools["wasm_calculator_check"]["effect"], "write", "the manifest travels with it");
    assert_eq!(
        tools["wasm_calculator_add"]["description"], "Add two whole numbers.\n\nadd(a: s32, b: s32) -> s32",
        "and its WIT, for the docs"
    );
    assert!(tools["wasm_calculator_greet"]["description"].as_str().unwrap().starts_with("Say hello to someone"));
}

/// Publish `component` as `wkg oci push` does: the Wasm config and the component as its one layer, no manifest.
fn push_as_wkg(reference: &str, component: Vec<u8>) {
    use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
    use sha2::Digest;
    let reference: oci_client::Reference = reference.strip_prefix("oci://").unwrap().parse().unwrap();
    let client = oci_client::Client::new(ClientConfig { protocol: ClientProtocol::Http, ..ClientConfig::default() });
    let digest: String = sha2::Sha256::digest(&component).iter().map(|b| format!("{b:02x}")).collect();
    let config = json!({ "architecture": "wasm", "os": "wasip2", "layerDigests": [format!("sha256:{digest}")] });
    let config = Config::new(config.to_string().into_bytes(), "application/vnd.wasm.config.v0+json".into(), None);
    let layers = [ImageLayer::new(component, "application/wasm".into(), None)];
    let anonymous = oci_client::secrets::RegistryAuth::Anonymous;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(client.push(&reference, &layers, config, &anonymous, None)).unwrap();
}

#[test]
fn a_component_published_without_a_manifest_installs_from_its_registry_named_after_its_repository() {
    let registry = OciRegistry::start();
    let env = TestEnv::trusted();
    let tag = registry.reference("someone/calc:1.0.0");
    push_as_wkg(&tag, std::fs::read(guests::CALCULATOR_WASM).unwrap());
    let installed = install(&env, &tag);
    assert_eq!((installed["installed"].as_str(), installed["kind"].as_str()), (Some("calc"), Some("component")));
    assert_eq!(installed["source"]["oci"], json!(tag), "{installed}");
    assert_eq!(call(&env, "ask", "wasm_calc_add", json!({ "a": 20, "b": 22 })).1["structuredContent"]["result"], 42);
    assert_eq!(
        tools(&env)["wasm_calc_add"]["description"],
        "add(a: s32, b: s32) -> s32 (a function of the component calc)",
        "no WIT came with it: described by its signature"
    );
    let update = json_of(&env.clat(&["plugin", "update", "calc", "--json"]));
    assert_eq!(update["updated"], false, "the same repository, the same bare plugin: {update}");
}

fn python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/.venv/bin/python");
    assert!(python.is_file(), "{} is missing: run scripts/install-test-peers.sh", python.display());
    python
}

#[test]
fn an_agent_calls_a_plain_component_through_clat_serve_with_the_python_sdk() {
    let env = TestEnv::trusted();
    install(&env, guests::CALCULATOR_PACKAGE);
    install(&env, text_tools("js").to_str().unwrap());
    install(&env, text_tools("python").to_str().unwrap());
    install(&env, guests::CLOCK_TOOL_PACKAGE);
    assert!(env.clat(&["plugin", "install", guests::WEB_FETCH_PACKAGE, "--grant"]).status.success());
    let server = HttpServer::start();
    // Past the discovery budget a client is offered a search instead: these are offered whatever it costs.
    for plugin in ["calculator", "text-tools-js", "text-tools-py", "clock-tool", "web-fetch"] {
        assert!(env.clat(&["plugin", "load", plugin, "always"]).status.success());
    }
    let calls = json!([
        { "name": "wasm_calculator_stats", "arguments": { "values": [2, 4] } },
        { "name": "wasm_calculator_area", "arguments": { "shape": { "circle": 1 } } },
        { "name": "wasm_calculator_divide", "arguments": { "a": 1, "b": 0 } },
        { "name": "wasm_calculator_check", "arguments": { "value": 1, "limit": 2, "strict": false } },
        { "name": "wasm_text_tools_js_stats", "arguments": { "text": "served from JavaScript" } },
        { "name": "wasm_text_tools_py_find", "arguments": { "text": "a1", "pattern": "any-digit" } },
        { "name": "wasm_clock_tool_now", "arguments": {} },
        { "name": "wasm_web_fetch_get", "arguments": { "url": server.url("/json") } },
    ]);
    let answer = json!({ "action": "accept", "content": { "decision": "allow" } });
    let args = json!(["--home", env.home, "--project", env.project, "serve", "--mode", "ask"]);
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers");
    let out = std::process::Command::new(python())
        .arg(peers.join("python_serve_client.py"))
        .arg(env!("CARGO_BIN_EXE_clat"))
        .arg(args.to_string())
        .arg(calls.to_string())
        .arg(answer.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    // The SDK's client validates each structured result against the tool's output schema: these passed.
    let schemas = &report["schemas"]["wasm_calculator_stats"];
    assert_eq!(schemas["input"]["properties"]["values"]["type"], "array", "{report}");
    assert_eq!(schemas["output"]["required"], json!(["result"]), "{report}");
    assert_eq!(report["tools"]["wasm_calculator_add"], json!({ "readOnlyHint": true, "openWorldHint": false }));
    let calls = &report["calls"];
    assert_eq!(
        calls[0]["structured"],
        json!({ "result": { "count": 2, "mean": 3.0, "smallest": 2.0, "largest": 4.0 } })
    );
    assert_eq!(calls[1]["structured"]["result"], json!(std::f64::consts::PI), "{report}");
    assert_eq!(
        (&calls[2]["isError"], &calls[2]["text"]),
        (&json!(true), &json!("cannot divide 1 by zero")),
        "{report}"
    );
    // `check` is write and `get` network: the client was asked for each, and allowed it.
    assert_eq!((&calls[3]["isError"], &calls[3]["text"]), (&json!(false), &json!("ok")), "{report}");
    assert_eq!(
        calls[4]["structured"]["result"],
        json!({ "words": 3, "lines": 1, "longest": "JavaScript" }),
        "{report}"
    );
    assert_eq!(calls[5]["structured"]["result"], json!([[1, 2]]), "{report}");
    assert!(calls[6]["structured"]["result"]["seconds"].as_u64().unwrap() > 1_700_000_000, "{report}");
    assert_eq!(calls[7]["structured"]["result"]["body"], JSON_DOCUMENT, "{report}");
    let asked = report["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{report}");
    assert!(asked[0]["message"].as_str().unwrap().contains("allow wasm_calculator_check (write:"), "{report}");
    assert!(asked[1]["message"].as_str().unwrap().contains("allow wasm_web_fetch_get (network"), "{report}");
}

#[test]
fn clat_plugin_new_writes_a_plain_component_project_that_tests_calls_and_installs_in_each_language() {
    let env = TestEnv::trusted();
    let parent = env.dir.path().join("work");
    std::fs::create_dir_all(&parent).unwrap();
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plain-component-target");
    let mut vars: Vec<(&str, String)> = support::toolchains::toolchain_env();
    vars.push(("CARGO_TARGET_DIR", target.display().to_string()));
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for lang in ["rust", "javascript", "python"] {
        let name = format!("plain-{lang}");
        let new = ["plugin", "new", &name, "--lang", lang, "--kind", "component", "--dir", parent.to_str().unwrap()];
        let out = env.clat_with_env(&new, &vars);
        assert_eq!(out.status.code(), Some(0), "{lang}: {}", stderr(&out));
        let project = parent.join(&name);
        let world = std::fs::read_to_string(project.join("wit/world.wit")).unwrap();
        assert!(world.contains("export hello: func(name: string) -> string;"), "its own world, no contract: {world}");
        assert!(!project.join("vendor").exists() && !project.join("clat.py").exists(), "{lang}: no CLAT SDK");
        let sdk = env.clat_with_env(&["plugin", "sdk", "update", project.to_str().unwrap()], &vars);
        assert_eq!(sdk.status.code(), Some(2), "{lang}: {}", stderr(&sdk));
        assert!(stderr(&sdk).contains("a plain component project"), "{lang}: {}", stderr(&sdk));
        let project = project.to_str().unwrap();
        let test = env.clat_with_env(&["plugin", "test", project, "--json"], &vars);
        assert_eq!(test.status.code(), Some(0), "{lang}: {}{}", stdout(&test), stderr(&test));
        let report = json_of(&test);
        assert_eq!((report["passed"].as_u64(), report["failed"].as_u64()), (Some(6), Some(0)), "{lang}: {report}");
        let call = env.clat_with_env(&["plugin", "call", project, "hello", r#"{"name":"you"}"#], &vars);
        assert_eq!(stdout(&call).trim(), "Hello, you!", "{lang}: {}", stderr(&call));
        let install = env.clat_with_env(&["plugin", "install", "--build", project], &vars);
        assert!(install.status.success(), "{lang}: {}", stderr(&install));
        let tool = format!("wasm_plain_{lang}_hello");
        let described = &tools(&env)[&tool]["description"];
        assert_eq!(described.as_str().unwrap().lines().next(), Some("Greet someone by name."), "{lang}: its WIT's doc");
    }
    // The JavaScript project's unit test runs in node's own runner, with nothing installed.
    let npm = std::process::Command::new("node")
        .args(["--test", "test/hello.test.js"])
        .current_dir(parent.join("plain-javascript"))
        .output()
        .unwrap();
    assert!(npm.status.success(), "{}{}", stdout(&npm), stderr(&npm));
}
