//! The unit tests of `capabilities`.

use super::*;

#[test]
fn a_tools_table_past_the_tool_cap_or_using_what_is_undeclared_is_refused() {
    let declared = caps(&["https://api.example.com"], &[]);
    let uses = |capability| ToolDeclaration { uses: vec![capability], ..ToolDeclaration::default() };
    let at_cap: BTreeMap<String, ToolDeclaration> =
        (0..TOOLS_PER_SERVER_MAX).map(|i| (format!("t{i}"), uses(Capability::Http))).collect();
    assert_eq!(ToolUses::validate(&at_cap, &declared), Ok(()));
    let mut past = at_cap.clone();
    past.insert("one-more".into(), ToolDeclaration::default());
    assert_eq!(ToolUses::validate(&past, &declared), Err(ToolDeclarationError::TooMany(TOOLS_PER_SERVER_MAX + 1)));
    let env = BTreeMap::from([("get".to_string(), uses(Capability::Env))]);
    let err = ToolUses::validate(&env, &declared).unwrap_err();
    assert_eq!(err.to_string(), "tools.get uses env, which [capabilities] does not declare");
    let table = ToolUses::of(&BTreeMap::from([("get".to_string(), uses(Capability::Http))]));
    assert!(table.allows("get", Capability::Http) && !table.allows("env", Capability::Http));
    assert!(ToolUses::of(&BTreeMap::new()).allows("anything", Capability::Env), "no table: every tool");
}

fn caps(http: &[&str], env: &[&str]) -> Capabilities {
    Capabilities {
        http: http.iter().map(|s| s.to_string()).collect(),
        env: env.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn patterns_name_an_origin_and_nothing_broader() {
    let p = HttpPattern::parse("https://api.example.com").unwrap();
    assert!(p.matches(HttpScheme::Https, "api.example.com", 443));
    assert!(p.matches(HttpScheme::Https, "API.Example.com.", 443));
    assert!(!p.matches(HttpScheme::Https, "api.example.com", 8443));
    assert!(!p.matches(HttpScheme::Http, "api.example.com", 443));
    assert!(!p.matches(HttpScheme::Https, "evil-api.example.com", 443));
    let sub = HttpPattern::parse("https://*.example.org:8443/").unwrap();
    assert!(sub.matches(HttpScheme::Https, "a.example.org", 8443));
    assert!(sub.matches(HttpScheme::Https, "a.b.example.org", 8443));
    assert!(!sub.matches(HttpScheme::Https, "example.org", 8443));
    assert!(!sub.matches(HttpScheme::Https, "badexample.org", 8443));
    assert!(!sub.matches(HttpScheme::Https, "a.example.org", 443));
    let local = HttpPattern::parse("http://127.0.0.1:*").unwrap();
    assert!(local.matches(HttpScheme::Http, "127.0.0.1", 4000));
    assert!(!local.matches(HttpScheme::Http, "127.0.0.2", 4000));
    assert!(!local.matches(HttpScheme::Http, "localhost", 4000), "a name is not the address it may resolve to");
    let v6 = HttpPattern::parse("http://[::1]:8080").unwrap();
    assert!(v6.matches(HttpScheme::Http, "[::1]", 8080));
    assert_eq!(v6.to_string(), "http://[::1]:8080");
    assert_eq!(sub.to_string(), "https://*.example.org:8443");
    assert_eq!(p.to_string(), "https://api.example.com");
}

#[test]
fn bad_patterns_are_refused_with_the_reason() {
    for (bad, why) in [
        ("*", "https://"),
        ("https://*", "never matches every host"),
        ("https://*.*", "never matches every host"),
        ("https://*.com", "too broad"),
        ("https://api.*.com", "whole leading labels"),
        ("ftp://example.com", "only https:// and http://"),
        ("http://api.example.com", "only for loopback"),
        ("https://api.example.com:*", "only for loopback"),
        ("https://api.example.com/v1", "without a path"),
        ("https://api.example.com?x=1", "without a path"),
        ("https://user:pw@api.example.com", "user info"),
        ("https://api.example.com:0", "not 1–65535"),
        ("https://api.example.com:99999", "not 1–65535"),
        ("https://exa mple.com", "not a host name"),
        ("https://", "empty"),
    ] {
        let err = HttpPattern::parse(bad).unwrap_err().to_string();
        assert!(err.contains(why), "{bad}: {err}");
    }
    let err = caps(&["https://ok.example.com", "https://*"], &[]).validate().unwrap_err().to_string();
    assert!(err.contains("capabilities.http entry \"https://*\""), "{err}");
    let err = caps(&[], &["GOOD", "1BAD"]).validate().unwrap_err().to_string();
    assert!(err.contains("capabilities.env entry \"1BAD\""), "{err}");
    let many: Vec<String> = (0..=WASM_HTTP_GRANTS_MAX).map(|i| format!("https://h{i}.example.com")).collect();
    let err = Capabilities { http: many, env: vec![] }.validate().unwrap_err().to_string();
    assert!(err.contains(&format!("at most {WASM_HTTP_GRANTS_MAX}")), "{err}");
    let many: Vec<String> = (0..=WASM_ENV_GRANTS_MAX).map(|i| format!("VAR_{i}")).collect();
    assert!(Capabilities { http: vec![], env: many }.validate().is_err());
}

#[test]
fn a_grant_covers_what_it_holds_and_names_what_is_new() {
    let granted = caps(&["https://api.example.com/", "http://localhost:3000"], &["TOKEN"]);
    assert!(granted.covers(&caps(&["HTTPS://API.example.com"], &["TOKEN"])));
    assert!(granted.covers(&Capabilities::default()));
    let more = caps(&["https://api.example.com", "https://other.example.com"], &["TOKEN", "SECRET"]);
    assert!(!granted.covers(&more));
    assert_eq!(granted.missing_from(&more), caps(&["https://other.example.com"], &["SECRET"]));
    let declared = caps(&["https://API.example.com/"], &["TOKEN", "OTHER"]);
    assert_eq!(more.within(&declared), caps(&["https://api.example.com"], &["TOKEN"]));
}

#[test]
fn numeric_hosts_are_addresses_in_canonical_form_never_names() {
    for form in ["2130706433", "0x7f000001", "127.1", "0177.0.0.1", "127.0.0.1", "0x7F.1"] {
        let pattern = HttpPattern::parse(&format!("https://{form}:8443")).unwrap();
        assert_eq!(pattern.host, HostPattern::Address("127.0.0.1".parse().unwrap()), "{form}");
        assert_eq!(pattern.to_string(), "https://127.0.0.1:8443", "{form}");
        assert!(pattern.is_internal() && pattern.is_loopback(), "{form}");
        for request in ["2130706433", "0x7f000001", "127.1", "127.0.0.1"] {
            assert!(pattern.matches(HttpScheme::Https, request, 8443), "{form} vs {request}");
        }
    }
    // A name grant never matches an address, in whatever form the request writes it.
    let name = HttpPattern::parse("https://api.example.com").unwrap();
    for request in ["2130706433", "0x7f000001", "127.1"] {
        assert!(!name.matches(HttpScheme::Https, request, 443), "{request}");
    }
    assert!(HttpPattern::parse("https://1.2.3.4.5").is_err(), "a name ending in a number that is no address");
    assert!(HttpPattern::parse("https://*.10.0.0.1").unwrap_err().to_string().contains("not a domain"));
    let granted = caps(&["https://2130706433:8443", "https://API.example.com"], &[]);
    assert_eq!(
        granted.describe(),
        [
            "HTTP requests to https://127.0.0.1:8443 (an internal address: a service on this machine or its private network)",
            "HTTP requests to https://api.example.com",
        ]
    );
    assert_eq!(granted.summary(), "http: https://127.0.0.1:8443 (internal), https://api.example.com");
}

#[test]
fn internal_addresses_are_recognised() {
    for internal in
        ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1"]
    {
        assert!(is_internal_address(internal.parse().unwrap()), "{internal}");
    }
    for internal in ["fe80::1", "fd00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1"] {
        assert!(is_internal_address(internal.parse().unwrap()), "{internal}");
    }
    for public in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"] {
        assert!(!is_internal_address(public.parse().unwrap()), "{public}");
    }
}
