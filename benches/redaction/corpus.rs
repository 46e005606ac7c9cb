//! The recall corpus: fake secrets generated in many formats, each set in a few kinds of
//! context (an env line, JSON, YAML, a Markdown code span, prose), and near misses that look like
//! secrets but are not (UUIDs, git SHAs, hashes, slugs, base64 images, versions, publishable keys,
//! placeholders). Shared by `cargo bench --bench redaction` and `tests/redaction_recall.rs`.
//!
//! The formats are written from the providers' documentation, apart from the rule catalog in
//! `src/guard/redact/rules/`, so the corpus checks the rules instead of repeating them.

#![allow(dead_code)]

/// One secret format: where it sits in a config line, and the shape of the secret.
pub struct Format {
    /// Short name, for the report.
    pub name: &'static str,
    /// The line the secret sits in; `{s}` is the secret.
    pub context: &'static str,
    /// The secret: literal text and random runs, `{m36}` (class m, 36 characters) or `{uuid}`.
    /// Classes: `m` letters and digits, `a` lowercase and digits, `A` uppercase and digits,
    /// `x` lowercase hex, `u` URL-safe base64, `b` base64, `d` digits, `L` letters, `z` base32
    /// lowercase, `B` bech32 uppercase.
    pub secret: &'static str,
}

const fn f(name: &'static str, context: &'static str, secret: &'static str) -> Format {
    Format { name, context, secret }
}

/// The formats: at least 150.
#[rustfmt::skip]
pub const FORMATS: &[Format] = &[
    // Cloud
    f("aws-access-key-id", "aws_access_key_id = {s}", "AKIA{A16}"),
    f("aws-temporary-key-id", "AWS_ACCESS_KEY_ID={s}", "ASIA{A16}"),
    f("aws-secret-key", "aws_secret_access_key = {s}", "{b40}"),
    f("aws-session-token", "aws_session_token = {s}", "IQoJb3JpZ2luX2VjE{b200}"),
    f("aws-bedrock-key", "AWS_BEARER_TOKEN_BEDROCK={s}", "ABSKQmVkcm9jaw{b110}"),
    f("gcp-api-key", "GOOGLE_API_KEY={s}", "AIza{u35}"),
    f("gcp-oauth-secret", "client_secret: {s}", "GOCSPX-{u28}"),
    f("gcp-access-token", "Authorization: Bearer {s}", "ya29.a0{u140}"),
    f("gcp-refresh-token", "\"refresh_token\": \"{s}\"", "1//0{u96}"),
    f("gcp-key-id", "\"private_key_id\": \"{s}\",", "{x40}"),
    f("azure-client-secret", "AZURE_CLIENT_SECRET={s}", "{m3}8Q~{m34}"),
    f("azure-storage-key", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};EndpointSuffix=core.windows.net", "{b86}=="),
    f("azure-service-bus", "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={s}", "{b43}="),
    f("azure-sas", "https://acme.blob.core.windows.net/c/a.pdf?sv=2022-11-02&sr=b&sp=r&sig={s}", "{b43}%3D"),
    f("azure-devops-pat", "AZURE_DEVOPS_EXT_PAT={s}", "{z52}"),
    f("azure-devops-pat-new", "token: {s}", "{m52}AZDO{m28}"),
    f("azure-openai-key", "AZURE_OPENAI_API_KEY={s}", "{x32}"),
    f("azure-apim-key", "Ocp-Apim-Subscription-Key: {s}", "{x32}"),
    f("azure-function-key", "https://acme.azurewebsites.net/api/export?code={s}", "{u54}=="),
    f("alibaba-key-id", "ALIBABA_CLOUD_ACCESS_KEY_ID={s}", "LTAI{m20}"),
    f("alibaba-secret", "ALIBABA_CLOUD_ACCESS_KEY_SECRET={s}", "{m30}"),
    f("tencent-secret-id", "TENCENTCLOUD_SECRET_ID={s}", "AKID{m32}"),
    f("tencent-secret-key", "TENCENTCLOUD_SECRET_KEY={s}", "{m32}"),
    f("ibm-api-key", "IBMCLOUD_API_KEY={s}", "{u44}"),
    f("digitalocean-pat", "DIGITALOCEAN_ACCESS_TOKEN={s}", "dop_v1_{x64}"),
    f("digitalocean-oauth", "token: {s}", "doo_v1_{x64}"),
    f("linode-token", "LINODE_TOKEN={s}", "{x64}"),
    f("vultr-key", "VULTR_API_KEY={s}", "{A36}"),
    f("hetzner-token", "HCLOUD_TOKEN={s}", "{m64}"),
    f("scaleway-secret", "SCW_SECRET_KEY={s}", "{uuid}"),
    f("heroku-key", "HEROKU_API_KEY={s}", "{uuid}"),
    f("heroku-key-v2", "heroku: {s}", "HRKU-AA{u58}"),
    f("fly-token", "FLY_API_TOKEN={s}", "fo1_{u43}"),
    f("fly-macaroon", "FLY_API_TOKEN=\"{s}\"", "fm2_{b150}"),
    f("cloudflare-token", "CLOUDFLARE_API_TOKEN={s}", "{u40}"),
    f("cloudflare-global", "CLOUDFLARE_API_KEY={s}", "{x37}"),
    f("cloudflare-origin-ca", "origin_ca_key = \"{s}\"", "v1.0-{x24}-{x146}"),
    f("vercel-token", "VERCEL_TOKEN={s}", "{m24}"),
    f("netlify-token", "NETLIFY_AUTH_TOKEN={s}", "nfp_{m36}"),
    f("render-key", "RENDER_API_KEY={s}", "rnd_{m32}"),
    f("railway-token", "RAILWAY_TOKEN={s}", "{uuid}"),
    f("openshift-token", "oc login --token={s} --server=https://api.example.com:6443", "sha256~{u43}"),
    f("yandex-api-key", "YC_API_KEY={s}", "AQVN{u36}"),
    f("yandex-iam", "YC_TOKEN={s}", "t1.9euelZqK{u24}.{u86}"),
    // Data and observability
    f("databricks-token", "DATABRICKS_TOKEN={s}", "dapi{x32}"),
    f("snowflake-password", "SNOWFLAKE_PASSWORD={s}", "{m18}"),
    f("clickhouse-secret", "CLICKHOUSE_KEY_SECRET={s}", "4b1d{m38}"),
    f("planetscale-token", "PLANETSCALE_SERVICE_TOKEN={s}", "pscale_tkn_{u43}"),
    f("planetscale-password", "password: {s}", "pscale_pw_{u43}"),
    f("supabase-pat", "SUPABASE_ACCESS_TOKEN={s}", "sbp_{x40}"),
    f("supabase-secret", "SUPABASE_SECRET_KEY={s}", "sb_secret_{u31}"),
    f("neon-api-key", "NEON_API_KEY={s}", "napi_{a64}"),
    f("neon-password", "DATABASE_URL=postgresql://neondb_owner:{s}@ep-red-sun-a5x7.us-east-2.aws.neon.tech/neondb?sslmode=require", "npg_{m12}"),
    f("mongodb-url", "MONGODB_URI=mongodb+srv://app:{s}@cluster0.x1y2z.mongodb.net/billing", "{m16}"),
    f("atlas-private-key", "MONGODB_ATLAS_PRIVATE_KEY={s}", "{uuid}"),
    f("postgres-url", "DATABASE_URL=postgres://billing:{s}@db.internal:5432/billing", "{m20}"),
    f("redis-url", "REDIS_URL=rediss://default:{s}@cache.internal:6380", "{m32}"),
    f("mysql-url", "url: mysql://root:{s}@127.0.0.1:3306/app", "{m14}"),
    f("amqp-url", "AMQP_URL=amqps://worker:{s}@mq.internal/vhost", "{m24}"),
    f("adonet-password", "Server=tcp:acme.database.windows.net,1433;Initial Catalog=billing;User ID=app;Password={s};Encrypt=True;", "{m16}"),
    f("jdbc-password", "jdbc:sqlserver://db.internal:1433;databaseName=billing;user=app;password={s};encrypt=true", "{m16}"),
    f("jdbc-query-password", "spring.datasource.url=jdbc:postgresql://db:5432/app?user=app&password={s}&ssl=true", "{m16}"),
    f("odbc-pwd", "Driver={ODBC Driver 18 for SQL Server};Server=db;Database=app;Uid=app;Pwd={s};", "{m16}"),
    f("oracle-jdbc", "jdbc:oracle:thin:billing/{s}@db.internal:1521:ORCL", "{m14}"),
    f("upstash-token", "UPSTASH_REDIS_REST_TOKEN={s}", "{u60}="),
    f("fauna-secret", "FAUNA_SECRET={s}", "fn{u38}"),
    f("aiven-password", "AIVEN_SERVICE_PASSWORD={s}", "AVNS_{u19}"),
    f("confluent-secret", "CONFLUENT_CLOUD_API_SECRET={s}", "{b64}"),
    f("kafka-jaas", "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"app\" password=\"{s}\";", "{m32}"),
    f("elastic-cloud-key", "EC_API_KEY={s}", "essu_{b60}=="),
    f("elastic-api-key", "Authorization: ApiKey {s}", "{b56}=="),
    f("algolia-admin", "ALGOLIA_ADMIN_API_KEY={s}", "{x32}"),
    f("airtable-pat", "AIRTABLE_TOKEN={s}", "pat{m14}.{x64}"),
    f("mixpanel-secret", "MIXPANEL_API_SECRET={s}", "{x32}"),
    f("amplitude-secret", "AMPLITUDE_SECRET_KEY={s}", "{x32}"),
    f("datadog-api-key", "DD_API_KEY={s}", "{x32}"),
    f("datadog-app-key", "DD_APP_KEY={s}", "{x40}"),
    f("newrelic-user-key", "NEW_RELIC_API_KEY={s}", "NRAK-{A27}"),
    f("newrelic-license", "license_key: {s}", "{x36}NRAL"),
    f("sentry-user-token", "SENTRY_AUTH_TOKEN={s}", "sntryu_{x64}"),
    f("sentry-org-token", "SENTRY_AUTH_TOKEN={s}", "sntrys_eyJpYXQiOjE3MDAwMDAwMDB9{b60}"),
    f("grafana-sa-token", "GRAFANA_SERVICE_ACCOUNT_TOKEN={s}", "glsa_{m32}_{x8}"),
    f("grafana-cloud-token", "GRAFANA_CLOUD_TOKEN={s}", "glc_{b80}="),
    f("dynatrace-token", "DT_API_TOKEN={s}", "dt0c01.{A24}.{A64}"),
    f("honeycomb-key", "HONEYCOMB_API_KEY={s}", "{m22}"),
    f("splunk-hec", "Authorization: Splunk {s}", "{uuid}"),
    f("looker-secret", "LOOKERSDK_CLIENT_SECRET={s}", "{m24}"),
    f("dbt-token", "DBT_CLOUD_API_TOKEN={s}", "dbtc_{u50}"),
    f("prefect-key", "PREFECT_API_KEY={s}", "pnu_{m36}"),
    f("apify-token", "APIFY_TOKEN={s}", "apify_api_{m36}"),
    f("fcm-server-key", "FCM_SERVER_KEY={s}", "AAAA{u7}:APA91b{u134}"),
    // Messaging
    f("slack-bot", "SLACK_BOT_TOKEN={s}", "xoxb-{d12}-{d13}-{m24}"),
    f("slack-user", "token: {s}", "xoxp-{d12}-{d12}-{d13}-{x32}"),
    f("slack-app", "SLACK_APP_TOKEN={s}", "xapp-1-A{A10}-{d13}-{x64}"),
    f("slack-webhook", "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{s}", "T{A8}/B{A10}/{m24}"),
    f("discord-bot", "DISCORD_TOKEN={s}", "MT{m22}.{u6}.{u38}"),
    f("discord-webhook", "https://discord.com/api/webhooks/{d19}/{s}", "{u68}"),
    f("telegram-bot", "TELEGRAM_BOT_TOKEN={s}", "{d10}:AA{u33}"),
    f("teams-webhook", "https://acme.webhook.office.com/webhookb2/{uuid}@{uuid}/IncomingWebhook/{s}/{uuid}", "{x32}"),
    f("twilio-api-key", "TWILIO_API_KEY={s}", "SK{x32}"),
    f("twilio-auth-token", "TWILIO_AUTH_TOKEN={s}", "{x32}"),
    f("sendgrid-key", "SENDGRID_API_KEY={s}", "SG.{u22}.{u43}"),
    f("mailgun-key", "MAILGUN_API_KEY={s}", "key-{x32}"),
    f("mailgun-new-key", "MAILGUN_API_KEY={s}", "{x32}-{x8}-{x8}"),
    f("mailchimp-key", "MAILCHIMP_API_KEY={s}", "{x32}-us14"),
    f("brevo-key", "BREVO_API_KEY={s}", "xkeysib-{x64}-{m16}"),
    f("brevo-smtp", "SMTP_PASSWORD={s}", "xsmtpsib-{x64}-{m16}"),
    f("postmark-token", "X-Postmark-Server-Token: {s}", "{uuid}"),
    f("resend-key", "RESEND_API_KEY={s}", "re_{m8}_{m24}"),
    f("mandrill-key", "MANDRILL_API_KEY={s}", "{u22}"),
    f("sparkpost-key", "SPARKPOST_API_KEY={s}", "{x40}"),
    f("mailjet-secret", "MJ_APIKEY_PRIVATE={s}", "{x32}"),
    f("messagebird-key", "MESSAGEBIRD_API_KEY={s}", "{m25}"),
    f("vonage-secret", "VONAGE_API_SECRET={s}", "{m16}"),
    f("plivo-token", "PLIVO_AUTH_TOKEN={s}", "{m40}"),
    f("sendbird-token", "SENDBIRD_API_TOKEN={s}", "{x40}"),
    f("pusher-secret", "PUSHER_APP_SECRET={s}", "{x20}"),
    f("intercom-token", "INTERCOM_ACCESS_TOKEN={s}", "dG9rOj{b54}="),
    f("zendesk-token", "ZENDESK_API_TOKEN={s}", "{m40}"),
    f("mattermost-token", "MATTERMOST_TOKEN={s}", "{a26}"),
    f("onesignal-key", "ONESIGNAL_REST_API_KEY={s}", "os_v2_app_{a110}"),
    f("zapier-hook", "https://hooks.zapier.com/hooks/catch/{d7}/{s}/", "{a10}"),
    f("smtp-password", "SMTP_PASSWORD={s}", "{m16}!"),
    // Payment
    f("stripe-live", "STRIPE_SECRET_KEY={s}", "sk_live_{m99}"),
    f("stripe-test", "stripe.api_key = \"{s}\"", "sk_test_{m24}"),
    f("stripe-restricted", "STRIPE_KEY={s}", "rk_live_{m24}"),
    f("stripe-webhook", "STRIPE_WEBHOOK_SECRET={s}", "whsec_{m32}"),
    f("paystack-secret", "PAYSTACK_SECRET_KEY={s}", "sk_live_{x40}"),
    f("polar-oat", "POLAR_ACCESS_TOKEN={s}", "polar_oat_{m40}"),
    f("square-token", "SQUARE_ACCESS_TOKEN={s}", "EAAA{u60}"),
    f("square-secret", "SQUARE_APPLICATION_SECRET={s}", "sq0csp-{u43}"),
    f("braintree-token", "BRAINTREE_ACCESS_TOKEN={s}", "access_token$production${a16}${x32}"),
    f("paypal-secret", "PAYPAL_CLIENT_SECRET={s}", "E{u79}"),
    f("adyen-key", "ADYEN_API_KEY={s}", "AQEyhmfxK4{b110}"),
    f("razorpay-key-id", "RAZORPAY_KEY_ID={s}", "rzp_live_{m14}"),
    f("razorpay-secret", "RAZORPAY_KEY_SECRET={s}", "{m24}"),
    f("flutterwave-secret", "FLW_SECRET_KEY={s}", "FLWSECK-{x32}-X"),
    f("mollie-key", "MOLLIE_API_KEY={s}", "live_{m30}"),
    f("gocardless-token", "GOCARDLESS_ACCESS_TOKEN={s}", "live_{u40}"),
    f("checkout-secret", "CKO_SECRET_KEY={s}", "sk_sbox_{a26}"),
    f("shopify-token", "SHOPIFY_ACCESS_TOKEN={s}", "shpat_{x32}"),
    f("shopify-secret", "SHOPIFY_API_SECRET={s}", "shpss_{x32}"),
    f("coinbase-secret", "COINBASE_API_SECRET={s}", "{u64}"),
    f("plaid-access", "access_token: {s}", "access-production-{uuid}"),
    f("plaid-secret", "PLAID_SECRET={s}", "{x30}"),
    f("shippo-token", "SHIPPO_API_TOKEN={s}", "shippo_live_{x40}"),
    f("easypost-key", "EASYPOST_API_KEY={s}", "EZAK{m54}"),
    f("duffel-token", "DUFFEL_ACCESS_TOKEN={s}", "duffel_live_{u43}"),
    f("lob-key", "LOB_API_KEY={s}", "live_{x35}"),
    f("wise-token", "WISE_API_TOKEN={s}", "{uuid}"),
    f("recurly-key", "RECURLY_API_KEY={s}", "{x32}"),
    f("chargebee-key", "CHARGEBEE_API_KEY={s}", "live_{m34}"),
    f("paddle-key", "PADDLE_API_KEY={s}", "pdl_live_apikey_{a26}_{m22}_{m3}"),
    f("authorize-net", "AUTHORIZENET_TRANSACTION_KEY={s}", "{m16}"),
    f("binance-secret", "BINANCE_API_SECRET={s}", "{m64}"),
    f("kraken-secret", "KRAKEN_PRIVATE_KEY={s}", "{b86}=="),
    f("woocommerce-secret", "WC_CONSUMER_SECRET={s}", "cs_{x40}"),
    // Registries and CI
    f("npm-token", "//registry.npmjs.org/:_authToken={s}", "npm_{m36}"),
    f("npmrc-auth", "_auth={s}", "{b40}"),
    f("pypi-token", "TWINE_PASSWORD={s}", "pypi-AgEIcHlwaS5vcmc{u120}"),
    f("rubygems-key", "GEM_HOST_API_KEY={s}", "rubygems_{x48}"),
    f("nuget-key", "dotnet nuget push app.nupkg --api-key {s} --source nuget.org", "oy2{a43}"),
    f("maven-password", "<server><id>release</id><username>deploy</username><password>{s}</password></server>", "{m24}"),
    f("clojars-token", "CLOJARS_PASSWORD={s}", "CLOJARS_{a60}"),
    f("crates-token", "CARGO_REGISTRY_TOKEN={s}", "cio{m32}"),
    f("dockerhub-pat", "DOCKERHUB_TOKEN={s}", "dckr_pat_{u27}"),
    f("artifactory-key", "ARTIFACTORY_API_KEY={s}", "AKCp{m69}"),
    f("jfrog-token", "JFROG_ACCESS_TOKEN={s}", "{m64}"),
    f("packagist-token", "PACKAGIST_TOKEN={s}", "packagist_uut_{x68}"),
    f("terraform-token", "token = \"{s}\"", "{m14}.atlasv1.{u67}"),
    f("pulumi-token", "PULUMI_ACCESS_TOKEN={s}", "pul-{x40}"),
    f("octopus-key", "OCTOPUS_API_KEY={s}", "API-{A26}"),
    f("bitbucket-app-password", "BITBUCKET_APP_PASSWORD={s}", "ATBB{m32}"),
    f("buildkite-token", "BUILDKITE_API_TOKEN={s}", "bkua_{x40}"),
    f("circleci-token", "CIRCLE_TOKEN={s}", "CCIPAT_{m22}_{x40}"),
    f("sonar-token", "SONAR_TOKEN={s}", "squ_{x40}"),
    f("snyk-token", "SNYK_TOKEN={s}", "{uuid}"),
    f("codecov-token", "CODECOV_TOKEN={s}", "{uuid}"),
    f("harness-key", "HARNESS_PLATFORM_API_KEY={s}", "pat.{u22}.{m24}.{m20}"),
    // ML
    f("openai-project", "OPENAI_API_KEY={s}", "sk-proj-{u80}T3BlbkFJ{u72}"),
    f("openai-service", "OPENAI_API_KEY={s}", "sk-svcacct-{u64}"),
    f("openai-legacy", "openai.api_key = \"{s}\"", "sk-{m48}"),
    f("anthropic-key", "ANTHROPIC_API_KEY={s}", "sk-ant-api03-{u93}AA"),
    f("huggingface-token", "HF_TOKEN={s}", "hf_{L34}"),
    f("groq-key", "GROQ_API_KEY={s}", "gsk_{m52}"),
    f("replicate-token", "REPLICATE_API_TOKEN={s}", "r8_{m37}"),
    f("openrouter-key", "OPENROUTER_API_KEY={s}", "sk-or-v1-{x64}"),
    f("xai-key", "XAI_API_KEY={s}", "xai-{m80}"),
    f("perplexity-key", "PERPLEXITY_API_KEY={s}", "pplx-{m48}"),
    f("cohere-key", "CO_API_KEY={s}", "{m40}"),
    f("mistral-key", "MISTRAL_API_KEY={s}", "{m32}"),
    f("deepseek-key", "DEEPSEEK_API_KEY={s}", "sk-{x32}"),
    f("together-key", "TOGETHER_API_KEY={s}", "{x64}"),
    f("fireworks-key", "FIREWORKS_API_KEY={s}", "fw_{m24}"),
    f("elevenlabs-key", "ELEVENLABS_API_KEY={s}", "sk_{x48}"),
    f("langsmith-key", "LANGSMITH_API_KEY={s}", "lsv2_pt_{x32}_{x10}"),
    f("wandb-key", "WANDB_API_KEY={s}", "{x40}"),
    f("pinecone-key", "PINECONE_API_KEY={s}", "pcsk_{m5}_{m64}"),
    f("assemblyai-key", "ASSEMBLYAI_API_KEY={s}", "{x32}"),
    f("deepgram-key", "DEEPGRAM_API_KEY={s}", "{x40}"),
    f("voyage-key", "VOYAGE_API_KEY={s}", "pa-{u43}"),
    f("llamacloud-key", "LLAMA_CLOUD_API_KEY={s}", "llx-{m48}"),
    f("nvidia-key", "NVIDIA_API_KEY={s}", "nvapi-{u64}"),
    f("kaggle-key", "KAGGLE_KEY={s}", "{x32}"),
    // Secret managers and encryption
    f("vault-token", "VAULT_TOKEN={s}", "hvs.CAESI{u100}"),
    f("doppler-token", "DOPPLER_TOKEN={s}", "dp.st.prd.{m40}"),
    f("onepassword-sa", "OP_SERVICE_ACCOUNT_TOKEN={s}", "ops_eyJ{b250}"),
    f("onepassword-secret-key", "Secret Key: {s}", "A3-{A6}-{A11}-{A5}-{A5}-{A5}"),
    f("infisical-token", "INFISICAL_TOKEN={s}", "st.{uuid}.{x32}.{x32}"),
    f("bitwarden-sm", "BWS_ACCESS_TOKEN={s}", "0.{uuid}.{m30}:{b22}=="),
    f("age-key", "AGE-SECRET-KEY in keys.txt: {s}", "AGE-SECRET-KEY-1{B58}"),
    f("wireguard-key", "PrivateKey = {s}", "{b42}A="),
    f("laravel-key", "APP_KEY={s}", "base64:{b43}="),
    f("rails-master", "RAILS_MASTER_KEY={s}", "{x32}"),
    f("django-secret", "SECRET_KEY = '{s}'", "django-insecure-{m40}"),
    f("jwt-secret", "JWT_SECRET={s}", "{m48}"),
    f("encryption-key", "ENCRYPTION_KEY={s}", "{b43}="),
    f("session-secret", "SESSION_SECRET=\"{s}\"", "{m40}"),
    f("webhook-signing", "webhookSigningSecret: \"{s}\"", "{m32}"),
    // Developer tools
    f("github-pat", "GITHUB_TOKEN={s}", "ghp_{m36}"),
    f("github-app", "token: {s}", "ghs_{m36}"),
    f("github-fine-grained", "GH_TOKEN={s}", "github_pat_11{A20}_{m59}"),
    f("gitlab-pat", "GITLAB_TOKEN={s}", "glpat-{u20}"),
    f("gitlab-runner", "token: {s}", "glrt-{u20}"),
    f("atlassian-token", "JIRA_API_TOKEN={s}", "ATATT3xFfGF0{u180}"),
    f("linear-key", "LINEAR_API_KEY={s}", "lin_api_{m40}"),
    f("notion-token", "NOTION_TOKEN={s}", "ntn_{m46}"),
    f("notion-legacy", "NOTION_KEY={s}", "secret_{m43}"),
    f("asana-pat", "ASANA_ACCESS_TOKEN={s}", "2/{d16}/{d16}:{x32}"),
    f("trello-token", "TRELLO_TOKEN={s}", "ATTA{m64}"),
    f("clickup-token", "CLICKUP_API_TOKEN={s}", "pk_{d8}_{A32}"),
    f("figma-token", "FIGMA_TOKEN={s}", "figd_{u40}"),
    f("postman-key", "POSTMAN_API_KEY={s}", "PMAK-{x24}-{x34}"),
    f("sourcegraph-token", "SRC_ACCESS_TOKEN={s}", "sgp_{x16}_{x40}"),
    f("typeform-token", "TYPEFORM_TOKEN={s}", "tfp_{u59}"),
    f("contentful-cma", "CONTENTFUL_MANAGEMENT_TOKEN={s}", "CFPAT-{u43}"),
    f("okta-token", "OKTA_API_TOKEN={s}", "00{u40}"),
    f("auth0-secret", "AUTH0_CLIENT_SECRET={s}", "{u64}"),
    f("launchdarkly-sdk", "LD_SDK_KEY={s}", "sdk-{uuid}"),
    f("tailscale-key", "TS_AUTHKEY={s}", "tskey-auth-{m12}-{m32}"),
    f("ngrok-token", "NGROK_AUTHTOKEN={s}", "2{m26}_{m21}"),
    f("facebook-token", "FB_ACCESS_TOKEN={s}", "EAAB{m160}"),
    f("twitter-bearer", "TWITTER_BEARER_TOKEN={s}", "AAAAAAAAAAAAAAAAAAAAA{m90}"),
    f("mapbox-secret", "MAPBOX_DOWNLOADS_TOKEN={s}", "sk.eyJ1Ijoi{u60}.{u22}"),
    f("dropbox-token", "DROPBOX_ACCESS_TOKEN={s}", "sl.u.{u140}"),
    f("hubspot-token", "HUBSPOT_ACCESS_TOKEN={s}", "pat-na1-{uuid}"),
    // Shapes not tied to a provider
    f("jwt", "Authorization: Bearer {s}", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{u60}.{u43}"),
    f("bearer", "curl -H \"Authorization: Bearer {s}\" https://api.example.com/v1/invoices", "{m40}"),
    f("basic-auth", "Authorization: Basic {s}", "YWRtaW46{b20}"),
    f("url-password", "git clone https://deploy:{s}@git.example.com/acme/docs.git", "{m24}"),
    f("password-env", "DB_PASSWORD={s}", "{m12}#{m4}"),
    f("password-quoted", "password: \"{s}\"", "{m20}"),
    // The whole value (issue 34): symbols inside it, a space before its last word, names and
    // flags that say pass, a longer key, credentials without a scheme, a pair without labels.
    f("password-ampersand", "DB_PASSWORD={s}", "{m9}&{m8}"),
    f("password-semicolon", "client_secret={s}", "{m9};{m8}"),
    f("password-apostrophe", "token: {s}", "{m9}'{m8}"),
    f("password-paren", "DB_PASSWORD={s}", "{m9}({m8}"),
    f("password-space", "DB_PASSWORD={s}", "{m9} {m8}"),
    f("smtp-pass", "SMTP_PASS={s}", "{m16}"),
    f("password-flag", "mysql -u app --password {s} billing", "{m12}!"),
    f("password-flag-equals", "pg_dump --db-password={s}", "{m14}"),
    f("aws-secret-longer", "aws_secret_access_key = {s}", "{b42}"),
    f("userinfo-no-scheme", "connect to admin:{s}@db.internal:5432", "{m14}"),
    f("aws-pair-unlabelled", "aws AKIA{A16} {s}", "{b40}"),
    f("passphrase", "passphrase = \"{s}\"", "correct horse {l6} staple {d3}"),
    f("generic-camel", "const paymentsApiKey = \"{s}\";", "{m32}"),
    f("generic-dotted", "billing.client.secret={s}", "{m28}"),
    f("generic-yaml", "  signing_key: {s}", "{b40}"),
    f("generic-json", "\"accessToken\": \"{s}\"", "{u48}"),
    f("pem-rsa", "{s}", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow{b64}\n{b64}\n-----END RSA PRIVATE KEY-----"),
    f("pem-openssh", "{s}", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE{b50}\n{b64}\n-----END OPENSSH PRIVATE KEY-----"),
    f("pem-ec", "key: |\n  {s}", "-----BEGIN EC PRIVATE KEY-----\n  MHcCAQEE{b56}\n  -----END EC PRIVATE KEY-----"),
    f("k8s-secret", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: billing\ndata:\n  api-token: {s}\n", "{b40}"),
];

/// The wrappers a format's line is set in: as written, in a Markdown code span, in a JSON
/// string (escaped), in a shell `export`, in a bullet of prose.
pub const WRAPPERS: &[&str] =
    &["{line}", "`{line}`", "{\"env\": \"{json}\"}", "export {line}", "- Set {line} in the dashboard."];

/// One generated secret in its text.
pub struct Case {
    /// The format's name.
    pub format: &'static str,
    /// The text to redact.
    pub text: String,
    /// The random runs of the secret: none of them may survive, in whole or in part.
    pub random: Vec<String>,
}

impl Case {
    /// The random runs of 8 or more characters of which some 8 characters still show in
    /// `output`: none when the secret was caught. (A piece that is not UTF-8 counts as shown.)
    pub fn survivors(&self, output: &str) -> Vec<&str> {
        self.random
            .iter()
            .filter(|run| run.len() >= 8)
            .filter(|run| {
                run.as_bytes().windows(8).any(|piece| match std::str::from_utf8(piece) {
                    Ok(piece) => output.contains(piece),
                    Err(_) => true,
                })
            })
            .map(String::as_str)
            .collect()
    }
}

/// A small deterministic random source (xorshift64).
pub struct Rng(u64);

impl Rng {
    /// Seeded; the same seed gives the same corpus.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick(&mut self, chars: &[u8]) -> char {
        char::from(chars[(self.next() % chars.len() as u64) as usize])
    }
    /// `len` characters of class `class` (see [`Format::secret`]), with a digit and a letter
    /// when the class has both and `len` is 8 or more: real keys of that length nearly always do.
    fn run(&mut self, class: char, len: usize) -> String {
        let chars: &[u8] = match class {
            'm' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            'a' => b"abcdefghijklmnopqrstuvwxyz0123456789",
            'A' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
            'x' => b"0123456789abcdef",
            'u' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
            'b' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            'd' => b"0123456789",
            'L' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
            'l' => b"abcdefghijklmnopqrstuvwxyz",
            'z' => b"abcdefghijklmnopqrstuvwxyz234567",
            'B' => b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
            _ => b"0123456789",
        };
        loop {
            let run: String = (0..len).map(|_| self.pick(chars)).collect();
            let digits = chars.iter().any(u8::is_ascii_digit);
            let letters = chars.iter().any(u8::is_ascii_alphabetic);
            let mixed = chars.iter().any(u8::is_ascii_uppercase) && chars.iter().any(u8::is_ascii_lowercase);
            let ok = len < 8
                || ((!digits || run.bytes().any(|b| b.is_ascii_digit()))
                    && (!letters || run.bytes().any(|b| b.is_ascii_alphabetic()))
                    && (!mixed
                        || (run.bytes().any(|b| b.is_ascii_uppercase())
                            && run.bytes().any(|b| b.is_ascii_lowercase()))));
            if ok {
                return run;
            }
        }
    }
    /// `template` with its runs and UUIDs filled in, and the random runs it got.
    pub fn fill(&mut self, template: &str) -> (String, Vec<String>) {
        let mut out = String::new();
        let mut random = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let Some(close) = rest[open..].find('}').map(|at| open + at) else {
                break;
            };
            let spec = &rest[open + 1..close];
            let mut chars = spec.chars();
            let class = chars.next().unwrap_or(' ');
            let templated =
                spec == "uuid" || ("maAxubdLlzB".contains(class) && chars.as_str().parse::<usize>().is_ok());
            if !templated {
                // A brace of the text itself (`Driver={ODBC Driver 18}`, `${TOKEN}`).
                out.push('{');
                rest = &rest[open + 1..];
                continue;
            }
            let value = if spec == "uuid" {
                [8, 4, 4, 4, 12].iter().map(|&n| self.run('x', n)).collect::<Vec<_>>().join("-")
            } else {
                self.run(class, chars.as_str().parse().unwrap_or(8))
            };
            random.push(value.clone());
            out.push_str(&value);
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        (out, random)
    }
}

/// `per_format` cases of every format, each in the next wrapper in turn.
pub fn cases(seed: u64, per_format: usize) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    let mut cases = Vec::new();
    for (index, format) in FORMATS.iter().enumerate() {
        for round in 0..per_format {
            let (secret, random) = rng.fill(format.secret);
            let (context, _) = rng.fill(format.context.replace("{s}", "\u{1}").as_str());
            let line = context.replace('\u{1}', &secret);
            // A multi-line secret (a PEM block, a manifest) is not wrapped in a one-line form.
            let wrapper = if line.contains('\n') { "{line}" } else { WRAPPERS[(index + round) % WRAPPERS.len()] };
            let json = line.replace('\\', "\\\\").replace('"', "\\\"");
            let text = wrapper.replace("{line}", &line).replace("{json}", &json);
            cases.push(Case { format: format.name, text, random });
        }
    }
    cases
}

/// Near misses: text that looks like a secret and is not. Each template is filled `rounds`
/// times with fresh random runs.
#[rustfmt::skip]
pub const NEAR_MISSES: &[&str] = &[
    // UUIDs and ids
    "The request {uuid} failed with a 502; retry it.",
    "request_id: {uuid}",
    "\"customer_id\": \"{uuid}\",",
    "idempotency_key_id={uuid}",
    "Open https://dashboard.example.com/orders/{uuid} to see the order.",
    "| {uuid} | paid | 2026-01-15 |",
    // Git SHAs and hashes
    "Fixed in commit {x40}.",
    "git checkout {x40}",
    "Merged {x7} into main; see {x12} for the revert.",
    "sha256: {x64}",
    "SHA-256 checksum: {x64}  docs-agent-linux-x86_64.tar.gz",
    "md5 {x32} for the old archive",
    "integrity=\"sha512-{b86}==\"",
    "ETag: \"{x32}\"",
    "digest: sha256:{x64}",
    "The image ghcr.io/acme/agent@sha256:{x64} is signed.",
    "content_hash = \"{x64}\"",
    // Slugs and paths
    "See /docs/billing/{l8}-{l6}-{l9}-guide for details.",
    "https://docs.example.com/{l7}-{l5}/{l9}-{l6}-2024-overview",
    "The page risk-admin-settings-{d4}-overview lists them.",
    "src/{l8}/{l6}_{l9}.rs",
    "keyboard_layout: {l2}-international-{d4}",
    "tokenizer_path: models/{l8}-{d3}m/tokenizer.json",
    "author_name: {L12}",
    // Base64 images and blobs that are not secrets
    "![logo](data:image/png;base64,iVBORw0KGgo{b200}=)",
    "<img src=\"data:image/svg+xml;base64,PHN2Zy{b120}\">",
    "font: url(data:font/woff2;base64,d09GMgABAAAAA{b160}) format(\"woff2\");",
    // Long words and prose about secrets
    "Internationalization and counterrevolutionaries are long words; so is pneumonoultramicroscopicsilicovolcanoconiosis.",
    "Rotate the API key every 90 days; the secret key is shown once.",
    "Set the token lifetime to {d2} minutes and the refresh token to {d2} days.",
    "The password must be at least {d2} characters long.",
    "Authorization: Bearer tokens expire after {d2} minutes.",
    "Keys are 32 hexadecimal characters; secrets are base64.",
    // Versions and numbers
    "Upgrade to v{d1}.{d2}.{d1} or later (version: {d4}.{d2}.0-rc.{d1}).",
    "node {d2}.{d2}.{d1}, npm {d2}.{d1}.{d1}, python 3.{d2}.{d1}",
    "Invoice INV-{d4}-{d6} totals 1,{d3}.{d2} EUR.",
    "Call +1 555 {d3} {d4} or fax 0{d3} {d6}.",
    "Build {d8}.{d4} of {d4}-{d2}-{d2}T{d2}:{d2}:{d2}Z",
    "price_{m14} and prod_{m14} are ids, not keys.",
    // Publishable keys and other public identifiers
    "STRIPE_PUBLISHABLE_KEY=pk_live_{m24}",
    "NEXT_PUBLIC_STRIPE_KEY=pk_test_{m24}",
    "publishableKey: \"pk_live_{m99}\"",
    "mapboxgl.accessToken = 'pk.eyJ1Ijoi{u40}.{u22}';",
    "SUPABASE_PUBLISHABLE_KEY=sb_publishable_{u31}",
    "TWILIO_ACCOUNT_SID=AC{x32}",
    "GOOGLE_CLIENT_ID={d12}-{a32}.apps.googleusercontent.com",
    "Sentry DSN: https://{x32}@o{d6}.ingest.sentry.io/{d7}",
    "public_key: \"{b43}=\"",
    "client_id: {m20}",
    // Placeholders from docs
    "STRIPE_SECRET_KEY=sk_live_...",
    "export OPENAI_API_KEY=\"sk-...\"",
    "API_KEY=YOUR_API_KEY",
    "token: <your-token>",
    "password: ********",
    "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "NPM_TOKEN=npm_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "SLACK_BOT_TOKEN=xoxb-your-bot-token",
    "aws_access_key_id = AKIAXXXXXXXXXXXXXXXX",
    "AWS_SECRET_ACCESS_KEY=<secret-access-key>",
    "Authorization: Bearer <ACCESS_TOKEN>",
    "client_secret: ${CLIENT_SECRET}",
    "DATABASE_URL=postgres://user:password@localhost:5432/app",
    "Write to mailto:support@acme.example or ssh to git@github.com:acme/docs.git.",
    "Run mysql --password with no value to be prompted; --token is required.",
    "Set SMTP_PASS=<smtp password> and DB_PASSWORD=${DB_PASSWORD} in .env",
    "connect as admin@db.internal:5432 with user:password@host",
    "AKIA starts a key id; the secret beside it is 40 characters of base64.",
    "password=$(cat /run/secrets/db_password)",
    "api_key: process.env.BILLING_API_KEY",
    "Use `sk_test_` keys in test mode and `sk_live_` keys in production.",
];

/// The near-miss texts, `rounds` fills of each template.
pub fn near_misses(seed: u64, rounds: usize) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for template in NEAR_MISSES {
        for _ in 0..rounds {
            out.push(rng.fill(template).0);
        }
    }
    out
}
