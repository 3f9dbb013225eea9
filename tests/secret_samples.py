"""Realistic secrets that redaction must catch, and ordinary code it must leave alone.

Shared by the redaction tests and `bench/redaction.py`. Each secret sample is a piece of text as an agent meets it
(a Claude Code Read, `cat -n`, a config file, a curl command, a log line) with the exact strings that must not be
stored; `kept` are strings around them that must survive (the key names, the rest of the line). None of these
secrets is real: they were drawn at random in the shape each provider issues.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from tests.db_dump import database_bytes  # noqa: F401 (re-exported) the scan of what a database holds, on either backend


class Sample(NamedTuple):
    name: str
    text: str
    secrets: tuple[str, ...]
    kept: tuple[str, ...] = ()


JWT = (
    "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImsxIn0.eyJzdWIiOiIyNDgyODk3NjEwMDEiLCJpc3MiOiJodHRwczovL2F1dGgu"
    "YWNtZS5pbyIsImV4cCI6MTczMTg3NjU0Mn0.Be8Pqd05ovm_CvzO9RuqVH-HC3LEGTjey4YKicc7-9C"
)
PEM_BODY = "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQC7VJTUt9Us8cKj"
AZURE_KEY = "FfCDMMYyEWKfDACQt4A6EUplAHWAh11/aqmVvBBRZbv7xH3GoPkQftvwrS2GNEJmG0hshPnlQMIaNoO82dZB4w=="

SECRETS: list[Sample] = [
    Sample(
        "claude_code_read_of_env",
        "     1→# production\n     2→DB_PASSWORD=Vq7#pL2x!Rm9sK4w\n     3→STRIPE_WEBHOOK_SECRET=whsec_9f3K2mQx7Lp4Vn8Rt1Zy6Hb0\n"
        "     4→DEBUG=false\n",
        ("Vq7#pL2x!Rm9sK4w", "whsec_9f3K2mQx7Lp4Vn8Rt1Zy6Hb0"),
        ("     2→DB_PASSWORD=", "     4→DEBUG=false"),
    ),
    Sample(
        "cat_n_of_env",
        "     1\tAPI_TOKEN=4d7e1c9a2b8f6e3d0c5a7b9e1f2d4c6a\n     2\tREDIS_PASSWORD=r3d1s-Pr0d-2024\n",
        ("4d7e1c9a2b8f6e3d0c5a7b9e1f2d4c6a", "r3d1s-Pr0d-2024"),
        ("     2\tREDIS_PASSWORD=",),
    ),
    Sample(
        "grep_n_of_env",
        "config/.env.production:7:SMTP_PASSWORD=mail-Relay-7731\n",
        ("mail-Relay-7731",),
        ("config/.env.production:7:SMTP_PASSWORD=",),
    ),
    Sample(
        "git_diff_of_env",
        "@@ -3,2 +3,2 @@\n-SESSION_SECRET=old-8c1f9e2a7b\n+SESSION_SECRET=new-3d6a0c4e9f\n",
        ("old-8c1f9e2a7b", "new-3d6a0c4e9f"),
    ),
    Sample("bare_jwt", f"decoded the session {JWT} and found sub 248289761001", (JWT,), ("decoded the session ",)),
    Sample("cookie_jwt", f"Cookie: theme=dark; auth={JWT}; lang=en\n", (JWT,), ("theme=dark", "lang=en")),
    Sample(
        "session_cookie",
        "Set-Cookie: sessionid=k2v9x7q4m1p8z3w6r5t0y2u7i4o9a1s3; Path=/; HttpOnly\n",
        ("k2v9x7q4m1p8z3w6r5t0y2u7i4o9a1s3",),
        ("Path=/; HttpOnly",),
    ),
    Sample(
        "gitlab_token",
        'curl --header "PRIVATE-TOKEN: glpat-gNSWPH8prVqsUeQCtDR3" https://gitlab.acme.io/api/v4/projects',
        ("glpat-gNSWPH8prVqsUeQCtDR3",),
        ("https://gitlab.acme.io/api/v4/projects",),
    ),
    Sample(
        "npm_token",
        "//registry.npmjs.org/:_authToken=npm_zzX6hqo35uwZqxZOOHjkJQQrkaPehMvbfrn2\n",
        ("npm_zzX6hqo35uwZqxZOOHjkJQQrkaPehMvbfrn2",),
    ),
    Sample(
        "pypi_token",
        "[pypi]\n  username = __token__\n  password = pypi-AgEIcHlwaS5vcmcWZ4moUxm-yI5B-KGnplJJpdu0ol29vX6N-631mG8YE5-is-I4cZ2cSV8HTMy\n",
        ("pypi-AgEIcHlwaS5vcmcWZ4moUxm-yI5B-KGnplJJpdu0ol29vX6N-631mG8YE5-is-I4cZ2cSV8HTMy",),
        ("username = __token__",),
    ),
    Sample(
        "azure_connection_string",
        f"AZURE_STORAGE=DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
        (AZURE_KEY,),
        ("AccountName=acmeprod", "EndpointSuffix=core.windows.net"),
    ),
    Sample(
        "huggingface_token",
        "login with 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 before pulling the model",
        ("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",),
        ("before pulling the model",),
    ),
    Sample(
        "sendgrid_key",
        'sg = SendGridAPIClient("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")',
        ("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",),
        ("SendGridAPIClient(",),
    ),
    Sample(
        "query_api_key",
        "GET https://api.weather.io/data/2.5/weather?q=Paris&api_key=8d152daf6d4d979653871646c8377069&units=metric",
        ("8d152daf6d4d979653871646c8377069",),
        ("?q=Paris&api_key=", "&units=metric"),
    ),
    Sample(
        "x_api_key_header",
        "curl -H 'X-Api-Key: 3227734ffac2b3a85ef3b1ea01c673b5' https://api.acme.io/v1/orders",
        ("3227734ffac2b3a85ef3b1ea01c673b5",),
        ("X-Api-Key: ", "https://api.acme.io/v1/orders"),
    ),
    Sample(
        "json_password_with_spaces",
        '{"username": "deploy", "password": "correct horse battery staple 42"}',
        ("correct horse battery staple 42", "staple 42"),
        ('"username": "deploy"',),
    ),
    Sample(
        "k8s_env_name_value",
        '        env:\n          - name: DB_PASSWORD\n            value: "Pg-Pr0d!2024#xyz"\n          - name: LOG_LEVEL\n            value: info\n',
        ("Pg-Pr0d!2024#xyz",),
        ("- name: DB_PASSWORD", "value: info"),
    ),
    Sample(
        "ecs_json_name_value",
        '"environment": [{"name": "API_SECRET", "value": "ecs-9Xq2Lm7Vt4"}, {"name": "PORT", "value": "80"}]',
        ("ecs-9Xq2Lm7Vt4",),
        ('"value": "80"',),
    ),
    Sample(
        "docker_compose_list",
        "    environment:\n      - POSTGRES_USER=app\n      - POSTGRES_PASSWORD=compose-Pg-9x7Lq2\n",
        ("compose-Pg-9x7Lq2",),
        ("- POSTGRES_USER=app", "- POSTGRES_PASSWORD="),
    ),
    Sample(
        "keyword_argument",
        'conn = psycopg2.connect(host="db.internal", user="app", password="Zq8!vR2mK5wx", port=5432)',
        ("Zq8!vR2mK5wx",),
        ('host="db.internal"', "port=5432)"),
    ),
    Sample(
        "python_settings_literal",
        "SECRET_KEY = 'django-insecure-7#q2!m9x@l4v&k8p1z^r6t3w0y5u'\nDEBUG = False\n",
        ("django-insecure-7#q2!m9x@l4v&k8p1z^r6t3w0y5u",),
        ("DEBUG = False",),
    ),
    Sample(
        "authorization_token_hex",
        "Authorization: token 9de7225be6c3bf6baf915e48f914109fb9b54062\n",
        ("9de7225be6c3bf6baf915e48f914109fb9b54062",),
        ("Authorization: token ",),
    ),
    Sample(
        "gcp_service_account",
        '{\n  "type": "service_account",\n  "project_id": "acme-prod-4471",\n'
        '  "private_key_id": "479cfb5b7bad30198596637c9e3c3e2716c624bf",\n'
        f'  "private_key": "-----BEGIN PRIVATE KEY-----\\n{PEM_BODY}\\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZ\\n'
        '-----END PRIVATE KEY-----\\n",\n  "client_email": "deploy@acme-prod-4471.iam.gserviceaccount.com"\n}',
        ("479cfb5b7bad30198596637c9e3c3e2716c624bf", PEM_BODY),
        ('"client_email": "deploy@acme-prod-4471.iam.gserviceaccount.com"',),
    ),
    Sample(
        "quoted_env_value_with_spaces",
        'export SECRET_KEY="my long secret phrase with spaces"\n',
        ("my long secret phrase with spaces", "phrase with spaces"),
        ("export SECRET_KEY=",),
    ),
    Sample(
        "url_password_with_slash_and_at",
        "DATABASE_URL=postgres://app:pa/ss@w0rd@db.internal:5432/prod",
        ("pa/ss@w0rd", "ss@w0rd", "w0rd@"),
        ("postgres://app:", "@db.internal:5432/prod"),
    ),
    Sample(
        "url_password_with_slash",
        "mysql://root:s3cr/et9@localhost/shop",
        ("s3cr/et9", "et9@"),
        ("mysql://root:", "@localhost/shop"),
    ),
    Sample(
        "url_password_in_git_remote",
        "git remote add origin https://deploy:Gh7-Qm2x-Lp9v@git.acme.io/acme/api.git",
        ("Gh7-Qm2x-Lp9v",),
        ("@git.acme.io/acme/api.git",),
    ),
    Sample(
        "yaml_password", "database:\n  user: app\n  password: yAml-S3cret-88\n", ("yAml-S3cret-88",), ("user: app",)
    ),
    Sample("toml_api_key", '[service]\napi_key = "tml_5f8e2c9a1b7d4e6f"\n', ("tml_5f8e2c9a1b7d4e6f",), ("[service]",)),
    Sample("js_constant", 'const apiKey = "js-4c8e1a7f2b9d6e3c";\n', ("js-4c8e1a7f2b9d6e3c",), ("const apiKey = ",)),
    Sample(
        "go_struct_field", 'cfg := Config{User: "app", Password: "go-Pw-7731x"}\n', ("go-Pw-7731x",), ('User: "app"',)
    ),
    Sample(
        "netrc",
        "machine api.heroku.com\n  login deploy@acme.io\n  password 4f1c9e7a-2b8d-4e6f-a0c5-9b3d7e1f2a4c\n",
        ("4f1c9e7a-2b8d-4e6f-a0c5-9b3d7e1f2a4c",),
        ("login deploy@acme.io",),
    ),
    Sample(
        "dotnet_connection_string",
        "Server=sql.acme.io;Database=shop;User Id=sa;Password=MyP@ssw0rd-77;Encrypt=true",
        ("MyP@ssw0rd-77",),
        ("User Id=sa;", ";Encrypt=true"),
    ),
    Sample(
        "spring_properties",
        "spring.datasource.username=app\nspring.datasource.password=spr1ng-Ds-Pw\n",
        ("spr1ng-Ds-Pw",),
        ("spring.datasource.username=app",),
    ),
    Sample(
        "npmrc_password",
        "//npm.acme.io/:username=ci\n//npm.acme.io/:_password=Y2ktcGFzc3dvcmQtOTk=\n",
        ("Y2ktcGFzc3dvcmQtOTk=",),
        ("//npm.acme.io/:username=ci",),
    ),
    Sample(
        "rails_secret_key_base",
        "SECRET_KEY_BASE=8b2c1f9e7a4d6b3c0e5f8a2d9c7b1e4f6a3d0c8b5e2f9a7d4c1b6e3f0a8d5c2b\n",
        ("8b2c1f9e7a4d6b3c0e5f8a2d9c7b1e4f6a3d0c8b5e2f9a7d4c1b6e3f0a8d5c2b",),
    ),
    Sample(
        "curl_user",
        "curl -u admin:Adm1n-Pw-2024 https://jenkins.acme.io/api/json",
        ("Adm1n-Pw-2024",),
        ("curl -u admin:",),
    ),
    Sample(
        "cli_flag", "mysql --host=db.acme.io --user=app --password=My5ql-Pw-31 shop", ("My5ql-Pw-31",), ("--user=app",)
    ),
    Sample(
        "docker_login",
        "+ docker login -u ci -p Dk9-Registry-Pw registry.acme.io\nLogin Succeeded",
        ("Dk9-Registry-Pw",),
        ("docker login -u ci -p ", "registry.acme.io"),
    ),
    Sample(
        "mysql_p",
        "mysql -u root -pR00t-Db-Pw shop < dump.sql",
        ("R00t-Db-Pw",),
        ("mysql -u root -p", "shop < dump.sql"),
    ),
    Sample(
        "weak_env_password",
        "POSTGRES_USER=app\nPOSTGRES_PASSWORD=password123\n",
        ("password123",),
        ("POSTGRES_USER=app",),
    ),
    Sample(
        "json_config_file",
        '{\n  "database": {\n    "user": "app",\n    "password": "supersecret"\n  }\n}\n',
        ("supersecret",),
        ('"user": "app"',),
    ),
    Sample(
        "terraform",
        'resource "aws_db_instance" "main" {\n  username = "app"\n  password = "tfvarsecret"\n}\n',
        ("tfvarsecret",),
        ('username = "app"',),
    ),
    Sample(
        "shell_script",
        "#!/bin/sh\nfunction deploy() {\n  export REGISTRY_PASSWORD='deploysecret'\n  DB_PASS=\"dbsecret\"\n}\n",
        ("deploysecret", "dbsecret"),
    ),
    Sample(
        "aws_keys",
        "aws_access_key_id = AKIACR9POVIODRLA906R\naws_secret_access_key = /5Eg+t6AHzNp+Zd9P2OLPibRiFuy4G4+XXaZEjKl\n",
        ("AKIACR9POVIODRLA906R", "/5Eg+t6AHzNp+Zd9P2OLPibRiFuy4G4+XXaZEjKl"),
    ),
    Sample(
        "github_token",
        "remote: token ghp_GMKnXQVHE88Z848ATZDvxy3KETVqyrxlbiUs rejected",
        ("ghp_GMKnXQVHE88Z848ATZDvxy3KETVqyrxlbiUs",),
    ),
    Sample(
        "openai_key",
        "OPENAI_API_KEY=sk-proj-p_-hD8cgr0wzwXfALqfPPiAcnkbC0tgQQ11c9cgdm2ybqnMP",
        ("sk-proj-p_-hD8cgr0wzwXfALqfPPiAcnkbC0tgQQ11c9cgdm2ybqnMP",),
    ),
    Sample(
        "anthropic_key",
        "client = Anthropic(api_key='sk-ant-api03-cfy7PxFKI81y-Bx_DI9ufkXQ_xx3OK2RagTeFdchQjuQ-WWqQYypqWZzMpTiNIK5Ff5oXoWXQpQlLCNB')",
        ("sk-ant-api03-cfy7PxFKI81y-Bx_DI9ufkXQ_xx3OK2RagTeFdchQjuQ-WWqQYypqWZzMpTiNIK5Ff5oXoWXQpQlLCNB",),
    ),
    Sample(
        "slack_token",
        "SLACK_BOT_TOKEN: xoxb-157704848482-5844711774046-r3uTRjjfrMN4H3k7mWFM38mT",
        ("xoxb-157704848482-5844711774046-r3uTRjjfrMN4H3k7mWFM38mT",),
    ),
    Sample("stripe_key", "stripe.api_key = sk_live_RZIzryAu0gg7JGEuhoAk5zCb", ("sk_live_RZIzryAu0gg7JGEuhoAk5zCb",)),
    Sample(
        "google_api_key",
        "https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key=AIzaGTN83ZJH7YxLA60W5Jxf9KqnCecvpspE-Av",
        ("AIzaGTN83ZJH7YxLA60W5Jxf9KqnCecvpspE-Av",),
    ),
    Sample("bearer_header", f"Authorization: Bearer {JWT}", (JWT,)),
    # Provider formats and command-line shapes seen in real configs and shell history (issue 24, item 3): each under
    # a key or in a command whose name does not say "secret", so the format itself must be recognised.
    Sample(
        "shopify_token",
        "shop.myshopify.com admin token: X-Shopify-Access-Token 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 (expires never)",
        ("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",),
        ("shop.myshopify.com admin token:", "(expires never)"),
    ),
    Sample(
        "vault_token",
        "$ vault login hvs.8r856BjRRLyYFtKu_ich-jTk237Qx7CzzV0xJ6lFxtk4AxuteYAS1GISyCQKPOtXbPdZj5RSkDJlN5SHd5aAovgRlLA\n"
        "Success! You are now authenticated.\n",
        ("hvs.8r856BjRRLyYFtKu_ich-jTk237Qx7CzzV0xJ6lFxtk4AxuteYAS1GISyCQKPOtXbPdZj5RSkDJlN5SHd5aAovgRlLA",),
        ("$ vault login ", "Success! You are now authenticated."),
    ),
    Sample(
        "databricks_token",
        "[DEFAULT]\nhost = https://adb-4471120938.12.azuredatabricks.net\ncluster = dapi16715b17bc3d176da893e72ff4c473f9\n",
        ("dapi16715b17bc3d176da893e72ff4c473f9",),
        ("host = https://adb-4471120938.12.azuredatabricks.net",),
    ),
    Sample(
        "doppler_tokens",
        "doppler configure set dp.pt.R9viNkpgk8v5z7p1z3aIQQTGOh4tgiOJpLbX1xWLrCa --scope /srv/app\n"
        "DOPPLER=dp.st.prd.7RwVUWn8yJzGBuLZwx2YR8LgbD8mQKQ4FPXrpo84 doppler run -- ./start\n",
        ("dp.pt.R9viNkpgk8v5z7p1z3aIQQTGOh4tgiOJpLbX1xWLrCa", "7RwVUWn8yJzGBuLZwx2YR8LgbD8mQKQ4FPXrpo84"),
        ("--scope /srv/app", "doppler run -- ./start"),
    ),
    Sample(
        "linear_key",
        "gh secret set LINEAR --body lin_api_Z9OzcRkr1lFWZdMrGwbTNr59TADF1DvxFRKog2BA --repo acme/api",
        ("lin_api_Z9OzcRkr1lFWZdMrGwbTNr59TADF1DvxFRKog2BA",),
        ("gh secret set LINEAR --body ", " --repo acme/api"),
    ),
    Sample(
        "discord_webhook",
        "ALERTS_URL=https://discord.com/api/webhooks/1824164964283867935/"
        "fZ5_8vybQcMHqjsmvg-rhx-ky736glNfgmU1A54Bk2tZIpQyxMLgvGOfGxmG3bZm-sTc\n",
        ("fZ5_8vybQcMHqjsmvg-rhx-ky736glNfgmU1A54Bk2tZIpQyxMLgvGOfGxmG3bZm-sTc",),
        ("ALERTS_URL=https://discord.com/api/webhooks/",),
    ),
    Sample(
        "telegram_bot_token",
        "curl -s https://api.telegram.org/bot6130485110:AA2pklDNoZzPyMDqW2m1lgO1tAZlX0RNjh5/getMe\n"
        "bot = Bot('6130485110:AA2pklDNoZzPyMDqW2m1lgO1tAZlX0RNjh5')\n",
        ("AA2pklDNoZzPyMDqW2m1lgO1tAZlX0RNjh5",),
        ("curl -s https://api.telegram.org/bot", "/getMe"),
    ),
    Sample(
        "azure_sas_url",
        "az storage blob download --blob-url 'https://acmeprod.blob.core.windows.net/backups/db.bak?sv=2022-11-02"
        "&ss=b&srt=o&sp=r&se=2025-03-01T00:00:00Z&spr=https&sig=mh9znwDjbBrTyX7Ccq0D%2F6nzSwJQZczZhO7RorY%2F3pF%3D'",
        ("mh9znwDjbBrTyX7Ccq0D%2F6nzSwJQZczZhO7RorY%2F3pF%3D", "mh9znwDjbBrTyX7Ccq0D"),
        ("https://acmeprod.blob.core.windows.net/backups/db.bak?sv=2022-11-02", "&spr=https&sig="),
    ),
    Sample(
        "docker_config_auth",
        '{\n\t"auths": {\n\t\t"registry.acme.io": {\n\t\t\t"auth": "Y2ktYm90OmRja3JfcGF0X3cxeDdyYjF6alhjR3BTRjlXYkRoMnpqS3ZuSQ=="\n'
        "\t\t}\n\t}\n}\n",
        ("Y2ktYm90OmRja3JfcGF0X3cxeDdyYjF6alhjR3BTRjlXYkRoMnpqS3ZuSQ==",),
        ('"registry.acme.io": {',),
    ),
    Sample(
        "aws_configure_set",
        "aws configure set aws_access_key_id AKIACR9POVIODRLA906R --profile prod\n"
        "aws configure set aws_secret_access_key anZe3AdrIN9VOLuiLtzTp/osIbpt3U/WuUrs5NmO --profile prod\n",
        ("AKIACR9POVIODRLA906R", "anZe3AdrIN9VOLuiLtzTp/osIbpt3U/WuUrs5NmO"),
        ("aws configure set aws_secret_access_key ", " --profile prod"),
    ),
    Sample(
        "url_encoded_github_token",
        "GET /ci/hook?redirect=https%3A%2F%2Fci.acme.io%2Fauth%3Dghp_f5SALOwsNl05vuX9NobHHMoqcYoLUW5gpVJt%26next%3D1 200",
        ("ghp_f5SALOwsNl05vuX9NobHHMoqcYoLUW5gpVJt",),
        ("GET /ci/hook?redirect=https%3A%2F%2Fci.acme.io", "%26next%3D1 200"),
    ),
    Sample(
        "twine_bare_token",
        "twine upload --non-interactive -u __token__ -p AgEIcHlwaS5vcmc9ipIhuqgKiKHNMAzBkbx89vgL7zSQgv49cYxtf8wk2_4ELiX"
        " dist/*\n",
        ("AgEIcHlwaS5vcmc9ipIhuqgKiKHNMAzBkbx89vgL7zSQgv49cYxtf8wk2_4ELiX",),
        ("-u __token__ -p ", " dist/*"),
    ),
    Sample(
        "twine_password",
        "python -m twine upload -r internal -u deploy -p 'Tw1ne-Upl0ad-Pw' dist/acme-1.2.0.tar.gz",
        ("Tw1ne-Upl0ad-Pw",),
        ("-u deploy -p ", "dist/acme-1.2.0.tar.gz"),
    ),
    # Whole config files: the secret-named keys that start a line after the first (issue 24, item 1).
    Sample(
        "dotenv_file",
        "# generated by deploy\nAPP_ENV=production\nPASSWORD=pR0d-9Lx!mQ2v\nTOKEN=tk_8f2c9a1e7b4d6f3a\n"
        "SECRET=s3cr-4Vq7Lm2x\nexport PASSPHRASE='gpg-Phr4se-77 x'\nLOG_LEVEL=info\n",
        ("pR0d-9Lx!mQ2v", "tk_8f2c9a1e7b4d6f3a", "s3cr-4Vq7Lm2x", "gpg-Phr4se-77 x"),
        ("APP_ENV=production", "PASSWORD=", "TOKEN=", "LOG_LEVEL=info"),
    ),
    Sample(
        "yaml_file",
        "version: 3\nservice: billing\npassword: y4ml-Top-Pw-31\ntoken: yml_7c1e9a4f2b8d\n"
        "redis:\n  host: cache\nsecret: 'q-9Xv2Lm7Tz'\n",
        ("y4ml-Top-Pw-31", "yml_7c1e9a4f2b8d", "q-9Xv2Lm7Tz"),
        ("service: billing", "password: ", "  host: cache"),
    ),
    Sample(
        "ini_file",
        "[database]\nhost=db.acme.io\nuser=app\npassword=1n1-Db-Pw-88\n\n[api]\ntoken = 1ni_4e7a2c9f1b\n"
        "passwd: ini-Colon-Pw-5\n",
        ("1n1-Db-Pw-88", "1ni_4e7a2c9f1b", "ini-Colon-Pw-5"),
        ("host=db.acme.io", "[api]"),
    ),
    Sample(
        "toml_file",
        '[tool.deploy]\nregion = "eu-west-1"\nsecret = "t0ml-Secr3t-Value"\ntoken = "toml_9d3b7e1a5c"\n'
        "password = 'Lit3ral-Pw-42'\n",
        ("t0ml-Secr3t-Value", "toml_9d3b7e1a5c", "Lit3ral-Pw-42"),
        ('region = "eu-west-1"', "secret = "),
    ),
    Sample(
        "crlf_env_file",
        "APP=web\r\nPASSWORD=crlf-Pw-61x\r\nTOKEN=crlf_tk_3a9e\r\n",
        ("crlf-Pw-61x", "crlf_tk_3a9e"),
        ("APP=web",),
    ),
    Sample(
        "pem_file",
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDu\n-----END RSA PRIVATE KEY-----\n",
        (PEM_BODY,),
    ),
]

# Ordinary code and documentation that must come back unchanged: expressions, calls, annotations, placeholders,
# documentation examples.
ORDINARY: list[str] = [
    "password = forms.CharField(widget=forms.PasswordInput)",
    "    token: Optional[str] = None",
    'api_key = os.environ["KEY"]',
    "api_key = os.environ.get('OPENAI_API_KEY')",
    "SECRET_KEY = env('DJANGO_SECRET_KEY')",
    "token = tokens[0]",
    "token = next(self.tokens)",
    "        password=password,",
    "    def login(self, username: str, password: str) -> Token:",
    "self.token = token",
    "if token == '(':",
    "const token = req.headers.authorization;",
    'token := os.Getenv("GITHUB_TOKEN")',
    "    token: The token used to authenticate the request.",
    "    password (str): the user's password",
    "DB_PASSWORD=${DB_PASSWORD}",
    "password: ${{ secrets.DB_PASSWORD }}",
    'url = f"postgres://{user}:{password}@{host}:{port}/{db}"',
    'headers = {"Authorization": f"Bearer {token}"}',
    'headers = {"Authorization": "Bearer " + token}',
    "Authorization: Bearer <token>",
    'API_KEY = "YOUR_API_KEY"',
    'api_key = "<your-api-key>"',
    'password = ""',
    "password = None",
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "mysql://user:pass@localhost/db",
    "postgresql://user:password@localhost:5432/mydb",
    "redis://:password@localhost:6379/0",
    "https://user:${PASSWORD}@example.com/",
    "ACCESS_TOKEN = 'access_token'",
    'TOKEN_TYPE = "bearer"',
    "token_type = 'Bearer'",
    "password_hash = make_password(password)",
    "PASSWORD_MIN_LENGTH=8",
    "max_tokens: int = 4096",
    "refresh_token = response.json()['refresh_token']",
    "secret = secrets.token_hex(32)",
    "    Token:                     '#d0d0d0',",
    "    Token.Keyword:             'bold #000080',",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    'private_key = "/etc/ssl/private/server.key"',
    "const { token } = await login(user, password);",
    "password = getpass.getpass('Password: ')",
    "    api_key: str | None = None,",
    'curl -H "X-Api-Key: $API_KEY" https://api.example.com',
    "https://api.example.com/v1?api_key={api_key}&q=1",
    "Authorization: token ${GITHUB_TOKEN}",
    "git@github.com:owner/repo.git",
    "eyJhbGciOiJIUzI1NiJ9 is the base64 of a JWT header",
    "npm_config_cache=/tmp/npm",
    "hf_hub_download(repo_id, filename)",
    "      id-token: write # required for npm provenance via OIDC",
    '    "pbkdf2-password": "0.1.2",',
    '  UnexpectedToken: "Unexpected token %0",',
    "gemini mcp add slack node server.js --env SLACK_TOKEN=xoxb-xxx",
    "password = ENV.fetch('DB_PASSWORD') { 'secret' }",
    "export TOKEN=$(vault read -field=token secret/ci)",
    "aws configure set region eu-west-1 --profile prod",
    'aws configure set aws_secret_access_key "$AWS_SECRET_ACCESS_KEY"',
    "npm config set //registry.npmjs.org/:_authToken ${NPM_TOKEN}",
    '    "auth": "oauth2",',
    '{"auth": {"type": "bearer"}}',
    "twine upload -u __token__ -p $PYPI_TOKEN dist/*",
    "WEBHOOK = f'https://discord.com/api/webhooks/{webhook_id}/{webhook_token}'",
    "https://api.telegram.org/bot<token>/sendMessage",
    "url = f'{base}?sv={version}&sig={signature}'",
    "Vault tokens start with hvs. (service), hvb. (batch) or hvr. (recovery).",
    "SHOPIFY_TOKEN=shpat_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "dapi_version = 2",
]


def found_in(data: bytes, secrets: list[str]) -> list[str]:
    """The secrets whose UTF-8 bytes (or their JSON-escaped form) occur in data."""
    return [s for s in secrets if s.encode() in data or json.dumps(s)[1:-1].encode() in data]
