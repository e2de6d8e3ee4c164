"""The secret-redaction corpus: fake secrets in the shapes they take in sessions, and look-alikes
that are not secrets (references to settings, counts, prose, code), scored against redact().

    python benchmarks/secret_corpus.py            # score the corpus (tests/fixtures/secret_corpus.json)
    python benchmarks/secret_corpus.py --write    # regenerate it (deterministic: seeded)

Every secret is generated here (random characters of the provider's shape); none is real. A
secret passes when its value is gone from redact()'s output; a look-alike passes when redact()
returns it unchanged. tests/test_secret_corpus.py asserts both for every entry.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "secret_corpus.json"
ALNUM = string.ascii_letters + string.digits


def _rand(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def secrets(rng: random.Random) -> list[dict[str, str]]:
    """(text, the secret value) pairs in the shapes sessions show them."""
    r = lambda n, a=ALNUM: _rand(rng, n, a)  # noqa: E731
    upper = string.ascii_uppercase + string.digits
    hexd = "0123456789abcdef"
    tokens = {
        "aws": "AKIA" + r(16, upper),
        "aws-secret": r(40, ALNUM + "/+"),
        "ghp": "ghp_" + r(36),
        "gho": "gho_" + r(36),
        "ghs": "ghs_" + r(36),
        "github-pat": "github_pat_" + r(22) + "_" + r(40),
        "gitlab": "glpat-" + r(20),
        "slack-bot": "xoxb-" + r(12, string.digits) + "-" + r(24),
        "slack-user": "xoxp-" + r(12, string.digits) + "-" + r(24),
        "stripe-live": "sk_live_" + r(24),
        "stripe-restricted": "rk_live_" + r(24),
        "stripe-test": "sk_test_" + r(24),
        "anthropic": "sk-ant-api03-" + r(40, ALNUM + "-_"),
        "openai-proj": "sk-proj-" + r(40),
        "openai": "sk-" + r(40),
        "google": "AIza" + r(35, ALNUM + "_-"),
        "npm": "npm_" + r(36),
        "jwt": "eyJ" + r(20) + ".eyJ" + r(30) + "." + r(43, ALNUM + "_-"),
    }
    found = []
    contexts = [
        "export {NAME}={v}",
        "{NAME}={v}",
        "{name}: {v}",
        '"{name}": "{v}"',
        "{name} = '{v}'",
        "curl -H 'Authorization: Bearer {v}' https://api.example.com/v1",
    ]
    names = {"aws": "AWS_ACCESS_KEY_ID", "aws-secret": "aws_secret_access_key"}
    for i, (kind, value) in enumerate(tokens.items()):
        for j in range(2):
            context = contexts[(i + j) % len(contexts)]
            name = names.get(kind, ["api_key", "auth_token", "service_token", "access_key"][(i + j) % 4])
            found.append({"kind": kind, "text": context.format(NAME=name.upper(), name=name, v=value), "secret": value})
        found.append({"kind": kind, "text": f"the key {value} was used", "secret": value})
    # Assignments to secret-named keys, in each language's syntax, with generated values.
    syntaxes = [
        ("python-annotated", '{name}: str = "{v}"'),
        ("python-kwarg", 'Client({name}="{v}")'),
        ("env", "{NAME}={v}"),
        ("env-quoted", '{NAME}="{v}"'),
        ("yaml", "  {name}: {v}"),
        ("yaml-quoted", "{name}: '{v}'"),
        ("json", '{{"{name}": "{v}"}}'),
        ("toml", '{name} = "{v}"'),
        ("elixir", 'config :app, {name}: "{v}"'),
        ("elixir-expr", 'config :app, {name}: String.duplicate("{v}", 2)'),
        ("ruby", '"{name}" => "{v}"'),
        ("js", 'const {camel} = "{v}";'),
        ("shell-export", "export {NAME}='{v}'"),
        ("ini", "{name}={v}"),
        ("cli-flag", "mysql --password={v} -u root"),
        ("cli-token", "tool login --token {v}"),
        ("header", "X-Api-Key: {v}"),
        ("cookie", "Cookie: session={v}"),
        ("query", "https://api.example.com/data?access_token={v}&page=2"),
    ]
    keys = [
        ("password", "password"),
        ("db_password", "dbPassword"),
        ("secret_key", "secretKey"),
        ("client_secret", "clientSecret"),
        ("api_key", "apiKey"),
        ("auth_token", "authToken"),
        ("signing_key", "signingKey"),
        ("private_key", "privateKey"),
        ("passphrase", "passphrase"),
        ("github_token", "githubToken"),
        ("secret_key_base", "secretKeyBase"),
    ]
    for i, (kind, syntax) in enumerate(syntaxes):
        for j in range(3):
            name, camel = keys[(i * 3 + j) % len(keys)]
            value = r(rng.randint(12, 32), ALNUM + "-_") if j else r(8, string.ascii_lowercase) + r(4, string.digits)
            text = syntax.format(name=name, NAME=name.upper(), camel=camel, v=value)
            found.append({"kind": kind, "text": text, "secret": value})
    # Credentials inside URLs and connection strings.
    for scheme in ("postgresql", "mysql", "mongodb+srv", "redis", "amqp", "https"):
        password = r(14)
        found.append(
            {
                "kind": "url",
                "text": f"{scheme}://user{r(3, string.digits)}:{password}@db.example.com/app",
                "secret": password,
            }
        )
    for _ in range(3):
        password = r(12, ALNUM + "!#")
        found.append(
            {
                "kind": "connection-string",
                "text": f"Server=db;Database=app;User Id=sa;Password={password};",
                "secret": password,
            }
        )
    key_body = r(64, ALNUM + "+/")
    found.append(
        {
            "kind": "pem",
            "text": f"-----BEGIN RSA PRIVATE KEY-----\n{key_body}\n-----END RSA PRIVATE KEY-----",
            "secret": key_body,
        }
    )
    basic = r(24, ALNUM + "+/") + "=="
    found.append({"kind": "basic-auth", "text": f"Authorization: Basic {basic}", "secret": basic})
    hook = r(24)
    found.append({"kind": "slack-webhook", "text": f"https://hooks.slack.com/services/T0/B0/{hook}", "secret": hook})
    found.append({"kind": "hex-secret", "text": f"SECRET_KEY={r(48, hexd)}", "secret": ""})
    found[-1]["secret"] = found[-1]["text"].split("=", 1)[1]
    return found


def look_alikes() -> list[str]:
    """Text that looks like a secret assignment but holds none: every one must come through unchanged."""
    references = [
        "api_key=settings.anthropic_api_key",
        "client = Anthropic(api_key=settings.anthropic_api_key)",
        'token = os.environ["GITHUB_TOKEN"]',
        'token = os.environ.get("GITHUB_TOKEN")',
        'password = os.getenv("DB_PASSWORD")',
        "const token = process.env.GH_TOKEN;",
        "apiKey: process.env.OPENAI_API_KEY,",
        'secret_key_base: System.get_env("SECRET_KEY_BASE")',
        "SECRET_KEY_BASE=${SECRET_KEY_BASE}",
        "API_KEY=$API_KEY",
        "password: ${{ secrets.DB_PASSWORD }}",
        "token: {{ vault_token }}",
        'password = config("DB_PASSWORD")',
        "api_key = get_api_key()",
        "token = self.token",
        "auth_token = request.headers.authorization",
        "api_key=api_key",
        "password=password,",
        "token = None",
        "password: null",
        "secret: nil",
        "auth: true",
        "token_required = False",
        'password: "********"',
        "api_key: <your-api-key>",
        "API_KEY=xxxxxxxx",
        "token: ...",
        "api_key: str",
        "password: Optional[str] = None",
        "secret_key: str = settings.secret_key",
        "token = credentials.token",
        "password = form.cleaned_data['password']",
        "token = response.json()['access_token']",
        "passwordHash = bcrypt.hash(password)",
        "apiKey = config.apiKey",
    ]
    counts = [
        "token_count = 4096",
        "max_tokens: 1024",
        "max_tokens=2048",
        "tokens = tokenizer.encode(text)",
        'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")',
        "password_min_length = 12",
        'password_policy: "at least 12 characters"',
        "token_ttl_seconds = 3600",
        "api_key_header = 'X-API-Key'",
        'api_key_env = "OPENAI_API_KEY"',
        "secret_name: prod/db",
        "token_type: bearer",
        "auth_mode = 'oauth'",
        'author = "Jane Doe"',
        "authors: Jane Doe, John Roe",
        'auth_url = "https://auth.example.com/login"',
        'token_endpoint = "https://auth.example.com/oauth/token"',
        "password_reset_timeout = 900",
        "key_size = 2048",
        "secret_santa_budget = 25",
    ]
    prose = [
        "The token was rotated last week; the password policy needs 12 characters.",
        "The tokenizer: splits words on whitespace and punctuation.",
        "Password: use the one from the team vault, never paste it here.",
        "Secret: the trick is to cache the embeddings.",
        "Auth: handled by the gateway, not by this service.",
        "Token budget: about 4,000 tokens per request.",
        "We store the API key in the OS keychain, never in the repo.",
        "Set GITHUB_TOKEN in your shell before running the release script.",
        "The secret_key_base is generated by mix phx.gen.secret.",
        "Rotate the signing key every 90 days.",
        "pytest -q tests/test_auth.py passed: 14 passed in 0.52s",
        "git commit -am 'Read the API key from settings'",
        "https://docs.example.com/guides/authentication#api-keys",
        "ssh deploy@example.com",
        "https://user@github.com/org/repo.git",
        "Edited app/config.py: now `api_key: str = Field(default='', repr=False)`",
        "The password field is hidden in the form.",
        "A token is a string of characters; a tokenizer makes them.",
        "See the secrets section of the docs for setup.",
        "Use `--token` to pass the token on the command line.",
        "commit 3f9a1c2e7b4d8f6a0c5e9b1d2f4a6c8e0b3d5f7a",
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "uuid 123e4567-e89b-12d3-a456-426614174000 is the session id",
        "The session id is 258c7280-ae70-4798-800f-63464d01a85d.",
        "Build 2024.11.3 shipped to production on Tuesday.",
        "Port 5432 is PostgreSQL's default.",
        "AKIA is the prefix of AWS access key ids.",
        "sk-... keys belong to the OpenAI account.",
        "We decided to use PostgreSQL 16 for the billing service.",
        "Password reset emails expire after 24 hours.",
        "token: the smallest unit a model reads",
        "secret sauce: good tests",
        "The API key lives in 1Password under 'Billing'.",
        "Bearer tokens are sent in the Authorization header.",
        "Basic authentication is disabled in production.",
        "The cookie expires after 30 days.",
        "Keys are rotated by the vault agent.",
        "If the token is missing, the CLI asks for it.",
        "Passwords must not be logged.",
        "The secret manager is AWS Secrets Manager.",
        "authorization: handled upstream",
        "x-request-id: 42",
        "Authentication failed: check your credentials file.",
        "The credentials file is ~/.aws/credentials.",
        "tokens: [1, 2, 3]",
        "api_keys: []",
    ]
    return references + counts + prose


def build() -> dict[str, object]:
    rng = random.Random(20261128)
    return {
        "note": "Generated by benchmarks/secret_corpus.py (seeded); every secret is random, none is real.",
        "secrets": secrets(rng),
        "look_alikes": look_alikes(),
    }


def score(corpus: dict[str, object]) -> dict[str, object]:
    sys.path.insert(0, str(CORPUS.parents[2]))
    from spatial_memory.text.secrets import redact

    kept = [s for s in corpus["secrets"] if s["secret"] in redact(s["text"])]
    changed = [t for t in corpus["look_alikes"] if redact(t) != t]
    return {
        "secrets": len(corpus["secrets"]),
        "secrets_kept": len(kept),
        "look_alikes": len(corpus["look_alikes"]),
        "look_alikes_redacted": len(changed),
        "kept": [s["text"] for s in kept],
        "redacted": changed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="regenerate the corpus file")
    args = parser.parse_args()
    if args.write:
        CORPUS.write_text(json.dumps(build(), indent=1) + "\n")
    result = score(json.loads(CORPUS.read_text()))
    print(json.dumps(result, indent=1))
    return 0 if not result["secrets_kept"] and not result["look_alikes_redacted"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
