//! Secret managers and encryption identities: HashiCorp Vault, Doppler, 1Password, Infisical,
//! Bitwarden, Akeyless, CyberArk Conjur, age, PuTTY, WireGuard, minisign, JSON Web Keys, Kubernetes
//! Secret manifests, and application master keys (Rails, Laravel, Sidekiq).

use super::{Check, Rule, rule};
#[cfg(test)]
use super::{Sample, hit, miss};

/// The rules of this file.
pub(super) const RULES: &[Rule] = &[
    rule("vault-token", &["hvs.", "hvb.", "hvr."], r#"hv[sbr]\.[A-Za-z0-9_-]{90,}"#, Check::Always),
    rule("vault-legacy-token", &["vault"], keyed!("vault", r#"s\.[A-Za-z0-9]{24}"#), Check::Random),
    rule("doppler-token", &["dp."], r#"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,30}\.)?(?P<b>[A-Za-z0-9]{40,44})"#, Check::Random),
    rule("onepassword-secret-key", &["a3-"], "A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}", Check::Always),
    rule("onepassword-service-account-token", &["ops_eyj"], "ops_eyJ[A-Za-z0-9+/]{100,}={0,3}", Check::Always),
    rule("infisical-token", &["st."], r#"st\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.[a-f0-9]{32}\.[a-f0-9]{32}"#, Check::Always),
    rule("infisical-client-secret", &["infisical"], keyed!("infisical", "[a-f0-9]{64}"), Check::Always),
    rule("bitwarden-access-token", &["0."], r#"(?-u:\b)0\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.[A-Za-z0-9]{30}:[A-Za-z0-9+/]{22,24}={0,2}"#, Check::Always),
    rule("akeyless-access-key", &["akeyless"], keyed!("akeyless", "[A-Za-z0-9+/]{43}="), Check::Random),
    rule("conjur-api-key", &["conjur"], keyed!("conjur", "[a-z0-9]{50,60}"), Check::Random),
    rule("age-secret-key", &["age-secret-key-1", "age-plugin-"], "AGE-(?:SECRET-KEY|PLUGIN-[A-Z0-9]+)-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{20,}", Check::Always),
    rule("putty-private-key", &["putty-user-key-file"], r#"PuTTY-User-Key-File-[0-9]:(?s:.*?)Private-Lines:[ \t]*[0-9]+\r?\n((?:[A-Za-z0-9+/=]+\r?\n)*[A-Za-z0-9+/=]+)(?:\r?\n|\z)"#, Check::Always).in_text(),
    rule("wireguard-private-key", &["privatekey"], r#"(?i:PrivateKey)[ \t]*=[ \t]*([A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=)"#, Check::Always),
    rule("minisign-secret-key", &["minisign"], r#"untrusted comment: minisign (?:encrypted )?secret key\r?\n(RW[A-Za-z0-9+/=]{100,})"#, Check::Always).in_text(),
    rule("jwk-private-key", &[r#""kty""#], r#""(?:d|p|q|dp|dq|qi|k)"[ \t]*:[ \t]*"([A-Za-z0-9_-]{20,})""#, Check::Random).in_text(),
    rule("kubernetes-secret-data", &["kind: secret", r#"kind: "secret""#], r#"(?m:^[ \t]+[A-Za-z0-9_.-]+:[ \t]*["']?([A-Za-z0-9+/]{8,}={0,2})["']?[ \t]*\r?$)"#, Check::KubernetesSecret).in_text(),
    rule("rails-master-key", &["master_key", "master-key", "masterkey"], keyed!("(?:rails[_-]?)?master[_-]?key", "[a-f0-9]{32}"), Check::Always),
    rule("laravel-app-key", &["app_key", "app-key", "appkey"], r#"(?i:app[_-]?key)[ \t]*[:=][ \t]*["']?(base64:[A-Za-z0-9+/]{43}=)"#, Check::Always),
    rule("sidekiq-credentials", &["contribsys"], r#"(?i:BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM)[ \t]*[:=][ \t]*["']?([a-f0-9]{8}:[a-f0-9]{8})"#, Check::Always),
];

/// The samples of this file's rules: fake secrets of the right shape.
#[cfg(test)]
#[rustfmt::skip]
pub(super) const SAMPLES: &[Sample] = &[
    hit("vault-token", "VAULT_TOKEN=⟦hvs.CAESIY4dRsdFsJorFTOzesEt-1t6jAM152vhieRzRGZORVBP97-v3WHqBhR3OHXY_MHxPs6LoJCUs-7EmI-aBzUdE_eHa42_zJlFCk07J⟧"),
    hit("vault-token", "batch ⟦hvb.AAAAAQL5b9Ty4cugRGULlNjusdb58MVhd96kbOXx6ywN604tCz_AaTzgRCR4Cxoow0jB0-YCS3uVydW2lWMLkMQ0sGuvQTF6KXIyIVDOK01yyb2r0r-W8k4uJuyKKVrxybq40UWv⟧"),
    miss("vault-token", "Service tokens start with hvs. and batch tokens with hvb."),
    hit("vault-legacy-token", "VAULT_TOKEN=⟦s.OQ2qE9oSXHxJtLXVIJwesu3T⟧"),
    miss("vault-legacy-token", "VAULT_TOKEN=<token>"),
    hit("doppler-token", "DOPPLER_TOKEN=⟦dp.st.prd.ALtLqzwRNBZVZAWUoCAFIOWGA5XntR7IU9oiZWiK⟧"),
    hit("doppler-token", "DOPPLER_TOKEN=⟦dp.pt.75xqf03xZHucRh5eokisAb2HdxTNQHq7x0FqmRFATQe⟧"),
    miss("doppler-token", "Service tokens look like dp.st.<config>.<token>."),
    hit("onepassword-secret-key", "Secret Key: ⟦A3-Y10JH6-Y7W2WDJJA2A-35Z5S-7FH1W-WBQ9P⟧"),
    miss("onepassword-secret-key", "Your Secret Key starts with A3- and is printed on your Emergency Kit."),
    hit("onepassword-service-account-token", "OP_SERVICE_ACCOUNT_TOKEN=⟦ops_eyJtyDehLcW4EUNbZ11TOcKVDHTYswzT2EAtfwi744qwMFiTQrs2rDgdAULkzswhEJ4UBQ9l3KNhit7dGTV6MFO7/YG5Of0PI5xFM27+pdYdVLJFLAxzwVBLdMeXB0YCvg/WSmjI4x/OUVLH/anEYjeZn6UvKvsWwnF2mf5WkEr14B7zssMv5xLDf9eFC5NW+pmJh4fkjmQtQbGnRtPOf/+oL/fvq1GKI4R11P8NpB4fUlBHeH17zs49LyAvq⟧"),
    miss("onepassword-service-account-token", "Service account tokens begin with ops_."),
    hit("infisical-token", "INFISICAL_TOKEN=⟦st.d684fd0c-0c26-fe4b-984c-6a3080aff63f.9ca2cb561a5f786cf24a11b6440ca2cd.f1b9bf27e01bd313ac480a42159c95d9⟧"),
    miss("infisical-token", "Service tokens look like st.<id>.<secret>.<key>."),
    hit("infisical-client-secret", "INFISICAL_CLIENT_SECRET=⟦3cc5afe6c6a2dbd7f4125295108cbaaa4a752a01dff4f38a0a00b3bdaec3ff5e⟧"),
    miss("infisical-client-secret", "INFISICAL_CLIENT_SECRET=<client-secret>"),
    hit("bitwarden-access-token", "BWS_ACCESS_TOKEN=⟦0.99708f2f-25b9-8965-2a90-9e9196deb399.E3RdLgRYgfpvO5ekCY1X2AHByZoYL5:RMYSjFFkT0k/TZ1B9Fl1mS==⟧"),
    miss("bitwarden-access-token", "BWS_ACCESS_TOKEN=<access-token>, version 0.3.1"),
    hit("akeyless-access-key", "AKEYLESS_ACCESS_KEY=⟦t89FSVKWNWlMAvt03LE0QntQJOf+T4gbrdp4LrfXnt2=⟧"),
    miss("akeyless-access-key", "AKEYLESS_ACCESS_KEY=<access-key>"),
    hit("conjur-api-key", "CONJUR_AUTHN_API_KEY=⟦tohqxnjm8mypq5ezeojt7g1rqn10u0cerpw0baqe4c9j59dcax9wp6e⟧"),
    miss("conjur-api-key", "CONJUR_AUTHN_API_KEY=<api-key>"),
    hit("age-secret-key", "# created: 2026-01-01\n⟦AGE-SECRET-KEY-1G0M22HSVNK6W0PQ0CCD64Z2TQJ6KYGG24TZQ8ML0KADWYKXLVG2AJ066JE⟧"),
    miss("age-secret-key", "Identity files hold a line that starts with AGE-SECRET-KEY-1."),
    hit("putty-private-key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIRXmyf1NQyh5adb/NhYSw\nAAAAwBzZyOl5kNYowjtIx8OR\nPrivate-Lines: 1\n⟦AAAAIRBK3upfKfFE+iM546iKGnyk5VBLY9EOpTkd2Tf9Z⟧\nPrivate-MAC: 4791464a48386939d7f4dd58d907a2e82a02d4f12c204256e1b625b623716ab5"),
    miss("putty-private-key", "Save the key as a PuTTY-User-Key-File with PuTTYgen."),
    hit("wireguard-private-key", "[Interface]\nPrivateKey = ⟦3Z4Ejm8xR/JRpE5y7vu/oW04hueP9gwzryJSepHUrcA=⟧\nAddress = 10.0.0.2/32"),
    miss("wireguard-private-key", "[Interface]\nPrivateKey = <client-private-key>"),
    hit("minisign-secret-key", "untrusted comment: minisign encrypted secret key\n⟦RWRTY0IyA7q6tWVSzBIgIbHpUfUTeKBezpA34Lk64ir0CfEPQTXdgCISY5SWFei0hDct19WbBp1U25fdSpvBIrWWLu3wp/jNh/7riz6ilrKoDQHVQFOqpiJEnxPlJUZwSsAp0pG/64lYFwggxmP8uW3ZZ/SDmB=⟧"),
    miss("minisign-secret-key", "untrusted comment: minisign public key 1234\nRWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"),
    hit("jwk-private-key", r#"{"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "d": "⟦ie9cS7ObCbXbEsQilcQM4VsOqsg1xHSC9hOmFtALHtg⟧"}"#),
    miss("jwk-private-key", r#"{"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#),
    hit("kubernetes-secret-data", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  username: ⟦YWRtaW4x⟧\n  password: ⟦6YVlClz48OHpB5t7p/gbJ9KD⟧\n"),
    miss("kubernetes-secret-data", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: production\ntype: Opaque"),
    hit("rails-master-key", "RAILS_MASTER_KEY=⟦06e0fd4c3fdfdf10519d23dc5b2768f9⟧"),
    miss("rails-master-key", "RAILS_MASTER_KEY=<contents of config/master.key>"),
    hit("laravel-app-key", "APP_KEY=⟦base64:0dQ6L1yKtdy0JECSL73HPvQDVI5rCxkbEs0iGZcb6NB=⟧"),
    miss("laravel-app-key", "APP_KEY=base64:"),
    hit("sidekiq-credentials", "BUNDLE_GEMS__CONTRIBSYS__COM=⟦71f309b9:58af184e⟧"),
    miss("sidekiq-credentials", "Set BUNDLE_GEMS__CONTRIBSYS__COM to your Sidekiq Pro credentials."),
];
