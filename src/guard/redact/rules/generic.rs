//! Shapes not tied to a provider: private keys, JWTs, passwords in URLs and connection strings,
//! `Authorization` headers, and values assigned to keys that name a secret.

use super::{Check, Rule, rule};
#[cfg(test)]
use super::{Sample, hit, miss};

/// The rules of this file.
pub(super) const RULES: &[Rule] = &[
    // A body must follow the header (so a header quoted in prose is left alone); with no END
    // line the rest of the text is the key and goes too.
    rule(
        "pem-private-key",
        &["private key"],
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:\s|\\r|\\n)*(?:[A-Za-z-]+:|[A-Za-z0-9+/=]{16})(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
        Check::Always,
    )
    .in_text(),
    // A token whose rule matched only its head (the rest was cut off by a link, emphasis or a
    // code span, and maybe joined back) leaves its tail glued to the marker, or behind the
    // markup that cut it: it goes too.
    rule("redaction-tail", &["[redacted]"], r"\[REDACTED\][\[*_`~]{0,3}([A-Za-z0-9_-]{4,})", Check::NotMarker),
    rule("jwt", &["eyj"], r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{0,}", Check::Always),
    rule(
        "url-password",
        &["://", r":\/\/"],
        r":\\?/\\?/[^\s:/?#@\[\]\\]{0,}:([^\s/?#@\\]{1,})@",
        Check::NotPlaceholder,
    ),
    rule(
        "authorization-header",
        &["authorization"],
        r#"(?i:authorization)["'`]?[ \t]*[:=][ \t]*["'`]?(?i:basic|token|bot|apikey)[ \t]+([A-Za-z0-9._~+/=-]{6,})"#,
        Check::TokenLike,
    ),
    rule("bearer-token", &["bearer"], r"(?-u:\b)(?i:bearer)[ \t]+([A-Za-z0-9._~+/-]{6,}=*)", Check::TokenLike),
    rule("basic-credentials", &["basic"], r"(?-u:\b)(?i:basic)[ \t]+([A-Za-z0-9+/]{8,}={0,2})", Check::BasicCredentials),
    rule(
        "generic-assignment-quoted",
        &["key", "token", "secret", "passw", "pwd", "_pass", "-pass", ".pass"],
        concat!(assignment_key!(), r#"(?:"#, quoted_escaped!(r"\s", "{6,}"), r#"|'([^'\s]{6,})'|`([^`\s]{6,})`)"#),
        Check::NotPlaceholder,
    ),
    // A passphrase: a quoted value with spaces after a password-like key.
    rule(
        "password-quoted-phrase",
        &["passw", "passphrase", "pwd"],
        concat!(
            r#"(?i:password|passwd|passphrase|pwd)\\?["'`]?[ \t]*(?::=|=>|[:=])[ \t]*(?:"#,
            quoted_escaped!(r"\n", "{4,200}"),
            r#"|'([^'\n]{4,200})')"#
        ),
        Check::NotPlaceholder,
    ),
    // The value on the next, indented line: a YAML block scalar (`password: |`) or a
    // pretty-printed JSON value. A nested key (`password:\n  policy: strict`) is no value.
    rule(
        "generic-assignment-next-line",
        &["key", "token", "secret", "passw", "pwd", "_pass", "-pass", ".pass"],
        concat!(
            assignment_key!(),
            r#"(?:[|>][-+]?)?[ \t]*\r?\n[ \t]+(?:"([^"\s]{6,})"|'([^'\s]{6,})'|([^\s"'`&:#]{6,})(?:[ \t]*(?:\r?\n|\z)))"#
        ),
        Check::BareAssignment,
    )
    .with_next_line(),
    // The whole value: `&`, `;`, `'` and `(` inside it are its own (`Tr0ub4dor&3xyzzyQ`); the
    // check ends it before a next parameter (`&state=`) and takes a last word after a space.
    rule(
        "generic-assignment-bare",
        &["key", "token", "secret", "passw", "pwd", "_pass", "-pass", ".pass"],
        concat!(assignment_key!(), r#"([^\s"'`][^\s"`]{5,})"#),
        Check::BareAssignment,
    ),
    // A command line's flag (`--password X`, `--db-password=X`, `--api-key "X"`): a `-` is right
    // before the secret's name, so the keywords hold it (`--` alone is in every table rule).
    rule(
        "flag-secret-quoted",
        &["-pass", "-secret", "-token", "-api-key", "-apikey"],
        concat!(
            r#"--(?i:[a-z0-9]+-)*(?:password|passwd|pass|secret|token|api-key|apikey)(?:=|[ \t]+)(?:"#,
            quoted_escaped!(r"\n", "{1,200}"),
            r#"|'([^'\n]{1,200})')"#
        ),
        Check::NotPlaceholder,
    ),
    rule(
        "flag-secret-bare",
        &["-pass", "-secret", "-token", "-api-key", "-apikey"],
        r#"--(?i:[a-z0-9]+-)*(?:password|passwd|pass|secret|token|api-key|apikey)(?:=|[ \t]+)([^\s"'`-][^\s"`]{2,})"#,
        Check::BareAssignment,
    ),
    // Credentials before a host without a scheme (`admin:Sup3rS3cretPw@db.internal:5432`); the
    // check keeps an address (`mailto:support@acme.com`) and a placeholder.
    rule(
        "userinfo-password",
        &["@"],
        r#"(?:^|[\s"'`=(,])[A-Za-z0-9._%+-]{1,64}:([^\s:/?#@\\"'`]{6,200})@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]{1,5})?"#,
        Check::Userinfo,
    ),
    // Any key that holds a secret-like word (`stripeSecretKey`, `SENDGRID_KEY`, `db.creds`)
    // with a random-looking value.
    rule(
        "generic-high-entropy",
        &["key", "token", "secret", "passw", "pwd", "credential", "creds", "auth"],
        r#"(?i:[a-z0-9_.-]{0,40}(?:key|token|secret|passw(?:or)?d|pwd|credentials?|creds|auth)[a-z0-9_.-]{0,20})\\?["'`]?[ \t]{0,5}(?::=|=>|\|\|:|\?=|[:=])[ \t]{0,5}\\?["'`]?([A-Za-z0-9_.=+/~-]{16,})"#,
        Check::HighEntropy,
    ),
    // Connection strings (ADO.NET, ODBC, JDBC properties): `Password=` up to the next `;`.
    rule(
        "connection-string-password",
        &["passw", "pwd"],
        r#"(?i:(?:^|[;?&"'\s])(?:password|passwd|pwd|user password)[ \t]*=[ \t]*)(?:\{([^}\r\n]{1,200})\}|"((?:[^"\\\r\n]|\\[^\r\n]){1,200})"|'([^'\r\n]{1,200})'|([^;&\s"'{][^;&\r\n"']{0,200}?))[ \t]*(?:;|&|"|'|\r?\n|\z)"#,
        Check::ConnectionString,
    ),
    rule("jdbc-oracle-password", &["jdbc:oracle"], r"jdbc:oracle:[a-z]+:[^/\s:@]{1,64}/([^@\s/]{1,200})@", Check::NotPlaceholder),
    rule(
        "azure-storage-account-key",
        &["accountkey"],
        r"(?i:AccountKey)[ \t]*=[ \t]*([A-Za-z0-9+/]{20,}={0,2})",
        Check::Random,
    ),
    rule(
        "azure-shared-access-key",
        &["sharedaccesskey", "sharedsecretvalue"],
        r"(?i:SharedAccessKey|SharedSecretValue)[ \t]*=[ \t]*([A-Za-z0-9+/]{20,}={0,2})",
        Check::Random,
    ),
    rule("azure-sas-signature", &["sig="], r"[?&;]sig=([A-Za-z0-9%+/]{20,}(?:%3D|=){0,2})", Check::Random),
];

/// The samples of this file's rules.
#[cfg(test)]
#[rustfmt::skip]
pub(super) const SAMPLES: &[Sample] = &[
    hit("pem-private-key", "before\n⟦-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq98ZxCVkNk\nq0FaKe2mXyzPEM1234567==\n-----END RSA PRIVATE KEY-----⟧\nafter"),
    hit("pem-private-key", "key:\n⟦-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAAABAAABlwAAAAdzc2gtcn⟧"),
    hit("pem-private-key", r#"{"private_key": "⟦-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----⟧\n"}"#),
    hit("pem-private-key", "⟦-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF0123456789abcdef\n-----END PGP PRIVATE KEY BLOCK-----⟧"),
    miss("pem-private-key", "The file starts with `-----BEGIN PRIVATE KEY-----` and ends with the END line."),
    hit("redaction-tail", "token [REDACTED]⟦AbCdEfGhIjKlMnOpQrStUvWx⟧ here"),
    hit("redaction-tail", "[REDACTED]⟦9f8e7d6c_tail-end⟧."),
    hit("redaction-tail", "xoxb [REDACTED][⟦AbCdEfGhIjKlMnOpQrStUvWx⟧](https://x.example/)"),
    miss("redaction-tail", "the key was [REDACTED] and [REDACTED]"),
    hit("jwt", "id ⟦eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c⟧ end"),
    hit("jwt", "cookie=⟦eyJhbGciOiJub25lIn0.eyJ1c2VyIjoiYWRtaW4ifQ.⟧"),
    miss("jwt", "eyJ is how a JWT starts"),
    hit("url-password", "postgres://admin:⟦s3cr3tPa55⟧@db.example.com:5432/app"),
    hit("url-password", "REDIS_URL=redis://:⟦hunter2hunter2⟧@cache:6379/0"),
    hit("url-password", "see https://bob:⟦p%40ssw0rd!x⟧@example.com/x"),
    hit("url-password", "MONGO=mongodb+srv://app:⟦Zq81kLmN0pQ⟧@cluster0.ab1cd.mongodb.net/prod"),
    miss("url-password", "ssh://git@github.com/owner/repo and postgres://user:<password>@host/db"),
    miss("url-password", "DATABASE_URL=postgres://user:password@localhost:5432/app"),
    hit("authorization-header", "Authorization: Basic ⟦dXNlcjpwYXNzd29yZA==⟧"),
    hit("authorization-header", "authorization: token ⟦0123456789abcdef0123⟧"),
    miss("authorization-header", "Authorization: Basic authentication is described below"),
    hit("bearer-token", "curl -H 'Authorization: Bearer ⟦abcDEF123ghiJKL456mno⟧' https://api.example.com"),
    hit("bearer-token", "send bearer ⟦a1b2c3d4e5⟧ first"),
    hit("bearer-token", "Bearer ⟦abcdefghijklmnopqrstuvwxyz⟧"),
    miss("bearer-token", "Authorization: Bearer YOUR_ACCESS_TOKEN and Bearer 2024-01-15 release notes"),
    hit("basic-credentials", "use Basic ⟦YWxhZGRpbjpvcGVuc2VzYW1l⟧ in the header"),
    hit("basic-credentials", r#""Basic ⟦dXNlcjpwYXNz⟧""#),
    miss("basic-credentials", "Basic authentication is supported. [Change Basic Settings](ui-change-basic-settings.md)"),
    hit("generic-assignment-quoted", r#"{"password": "⟦hunter2hunter2⟧"}"#),
    hit("generic-assignment-quoted", "api_key='⟦changeme⟧'"),
    hit("generic-assignment-quoted", "set `client_secret: `⟦Kq8~abcdEFGH⟧`` first"),
    miss("generic-assignment-quoted", r#"token="<YOUR_BEARER_TOKEN_HERE>" and api_key = "${API_KEY}""#),
    hit("generic-assignment-quoted", r#"{"env": "{\"password\": \"⟦hunter2hunter2⟧\"}"}"#),
    // Escapes inside the quotes are the value's own (issue 51, finding 7).
    hit("generic-assignment-quoted", r#"{"password": "⟦Tr0ub4dor\\3xyzzyQ⟧"}"#),
    hit("generic-assignment-quoted", r#"{"api_key": "⟦a8Fk3LqZ\"0vXw9TmB2nRc⟧"}"#),
    hit("generic-assignment-quoted", r#"{"secret": "⟦a\\b\\c\\d\\e\\f⟧"}"#),
    hit("generic-assignment-quoted", r#"{"env": "{\"password\": \"⟦hunter2\\\"hunter2⟧\"}"}"#),
    hit("generic-assignment-quoted", r#"{"env": "{\"password\": \"⟦hunter2\\\\hunter2⟧\"}"}"#),
    miss("generic-assignment-quoted", r#"{"password": "<your \"password\">", "token": "${TOKEN\\X}"}"#),
    miss("generic-assignment-quoted", "mapboxgl.accessToken = 'pk.eyJ1IjoiYWNtZSIsImEiOiJjbGF4In0.Zm9vYmFyYmF6cXV4';"),
    hit("password-quoted-phrase", r#"password: "⟦correct horse battery staple⟧""#),
    hit("password-quoted-phrase", r#"password: "⟦correct horse\\ battery staple⟧""#),
    hit("password-quoted-phrase", r#"password: "⟦correct horse\" battery staple⟧""#),
    hit("password-quoted-phrase", r#"DB_PASSWORD="⟦hunter 2 is my pw⟧" next"#),
    hit("password-quoted-phrase", "passphrase = '⟦blue sky over the hill⟧'"),
    hit("password-quoted-phrase", r#"{"env": "password: \"⟦correct horse battery⟧\""}"#),
    miss("password-quoted-phrase", r#"the Password field says "Enter your password" and password: "<your password>""#),
    hit("generic-assignment-bare", "DB_PASSWORD=⟦S3cr3t!Pass⟧"),
    hit("generic-assignment-bare", "client_secret: ⟦8Q~abc.DEF_ghi-JKL⟧"),
    hit("generic-assignment-bare", "  x-api-key: ⟦0123456789abcdef⟧,"),
    hit("generic-assignment-bare", "pwd=⟦correcthorsebattery⟧\nnext"),
    hit("generic-assignment-bare", "https://app.example.com/cb?access_token=⟦abc123def456⟧&state=xyz"),
    hit("generic-assignment-bare", "PRIVATE_KEY := ⟦k3y-m4t3r14l⟧"),
    miss("generic-assignment-bare", "Reset your password: https://acme.example/account/reset; Password: case-sensitive"),
    miss("generic-assignment-bare", "password: ******** and token=xxxxxxxxxxxx"),
    hit("generic-assignment-bare", "DB_PASSWORD=⟦Tr0ub4dor&3xyzzyQ⟧"),
    hit("generic-assignment-bare", "DB_PASSWORD=⟦Tr0ub4dor;3xyzzyQ⟧ next"),
    hit("generic-assignment-bare", "DB_PASSWORD=⟦Tr0ub4dor'3xyzzyQ⟧"),
    hit("generic-assignment-bare", "DB_PASSWORD=⟦Tr0ub4dor(3xyzzyQ⟧"),
    hit("generic-assignment-bare", "DB_PASSWORD=⟦Tr0ub4dor 3xyzzyQ⟧"),
    hit("generic-assignment-bare", "client_secret=⟦Tr0ub4dor&3xyzzyQ⟧ and password: ⟦Tr0ub4dor;3xyzzyQ⟧"),
    hit("generic-assignment-bare", "token: ⟦Tr0ub4dor'3xyzzyQ⟧"),
    hit("generic-assignment-bare", "SMTP_PASS=⟦Tr0ub4dor&3xyzzyQ⟧"),
    hit("generic-assignment-bare", "smtp.pass: ⟦mailP4ss!⟧"),
    miss("generic-assignment-bare", "token: os.getenv( and password=getPassword(); then bypass: enabled"),
    miss("generic-assignment-bare", "Set DB_PASSWORD=<password> and restart the app"),
    hit("flag-secret-bare", "mysql -u app --password ⟦Tr0ub4dor&3⟧ billing"),
    hit("flag-secret-bare", "psql --db-password=⟦S3cr3t!Pass⟧"),
    hit("flag-secret-quoted", r#"tool login --api-key "⟦k3y with space9⟧""#),
    hit("flag-secret-quoted", r#"tool login --password "⟦k3y with\" space9⟧""#),
    hit("flag-secret-quoted", r#"tool login --password "⟦k3y with\\ space9⟧" --verbose"#),
    miss("flag-secret-quoted", r#"tool login --password "<your password>" --token '${TOKEN}'"#),
    miss("flag-secret-bare", "pass --password $DB_PASSWORD or --password <pw>; --token is required"),
    hit("userinfo-password", "connect to admin:⟦Sup3rS3cretPw⟧@db.internal:5432 now"),
    hit("userinfo-password", "DSN=app:⟦Zq81-kLmN0pQ⟧@tcp(db:3306)/billing"),
    miss("userinfo-password", "mailto:support@acme.example and user:password@host and git:main@origin"),
    miss("userinfo-password", "through [the team](mailto:d365bcloc@microsoft.com) or sip:ops42@pbx.acme.example"),
    hit("generic-assignment-next-line", "password: |\n  ⟦S3cr3tPa55word⟧\nnext: 1"),
    hit("generic-assignment-next-line", "{\"password\":\n    \"⟦S3cr3tPa55⟧\"}"),
    miss("generic-assignment-next-line", "password:\n  policy: strict\n  rotation: 90d"),
    hit("generic-high-entropy", "SENDGRID_KEY=⟦Q2x9vLm4Tz8RkP1wYb6N⟧"),
    hit("generic-high-entropy", r#"const stripeSecretKey = "⟦a8Fk3LqZ0vXw9TmB2nRc⟧";"#),
    hit("generic-high-entropy", "mailgun.credentials: ⟦k7h2p9x4m1q8w3z6b5v0⟧"),
    miss("generic-high-entropy", "STRIPE_PUBLISHABLE_KEY=pk_live_51H0abcdEFGHijklMNOP and keyboard_layout: us-international-2024"),
    miss("generic-high-entropy", "api_key_id: 7f3c9a2e-41b8-4d6f-9c0e-5a7b3d1f8e24"),
    miss("generic-high-entropy", "$authB64 = New-XOAuth2String -User $From -Token $accessToken"),
    hit("generic-high-entropy", r#"{"env": "SESSION_SECRET=\"⟦hAXxgqgVLodPGuqHQz01szhDQONpB07mbdG7MGZ9⟧\""}"#),
    hit("connection-string-password", "Server=tcp:acme.database.windows.net,1433;User ID=app;Password=⟦myPassword⟧;Encrypt=True;"),
    hit("connection-string-password", "jdbc:sqlserver://db:1433;databaseName=billing;user=sa;password=⟦Summer Time⟧;"),
    hit("connection-string-password", "jdbc:mysql://db:3306/billing?user=app&password=⟦tr0ub4dor⟧&useSSL=true"),
    hit("connection-string-password", r#"Data Source=db;Initial Catalog=app;User Id=app;Password="⟦pa;ss word⟧";"#),
    hit("connection-string-password", r#"Data Source=db;User Id=app;Password="⟦pa\"ss word⟧";"#),
    miss("connection-string-password", "Server=db;Database=app;User Id=app;Password=<your-password>;"),
    miss("connection-string-password", "Set the Password= option in the settings file, then restart."),
    hit("jdbc-oracle-password", "url: jdbc:oracle:thin:scott/⟦T1ger!x⟧@db.example.com:1521:ORCL"),
    miss("jdbc-oracle-password", "url: jdbc:oracle:thin:@db.example.com:1521:ORCL"),
    hit("azure-storage-account-key", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=⟦Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==⟧;EndpointSuffix=core.windows.net"),
    miss("azure-storage-account-key", "AccountKey=<storage-account-key>;"),
    hit("azure-shared-access-key", "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=⟦k3Zx9Qm2Lp8Rt5Vw1Yb4Nc7Hd0Jf6Gs2Ea9UoIq3Mk=⟧"),
    miss("azure-shared-access-key", "SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=<key>"),
    hit("azure-sas-signature", "https://acme.blob.core.windows.net/c/f.pdf?sv=2022-11-02&se=2026-01-01&sr=b&sp=r&sig=⟦3vT9kLmQ2xR8pZ1wYb6NcH4dJ7fG0sEaUoIq5Mk%3D⟧"),
    miss("azure-sas-signature", "the query string ends with &sig=<signature>"),
];
