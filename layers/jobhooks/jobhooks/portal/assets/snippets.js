// Verification snippets: the Standard Webhooks libraries check every webhook this bridge sends
// (webhook-id, webhook-timestamp, webhook-signature; during a secret rotation, either secret).

export function pythonSnippet(url) {
  return `# pip install standardwebhooks
# Receives the webhooks of ${url}
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRET = "whsec_..."  # this endpoint's signing secret (shown once; keep it out of your code)
webhook = Webhook(SECRET)


def handle(raw_body: bytes, headers: dict[str, str]) -> int:
    """Verify with the exact bytes received, before parsing them."""
    try:
        event = webhook.verify(raw_body, headers)
    except WebhookVerificationError:
        return 401  # not from us, changed on the way, or too old: drop it
    # The same webhook-id may arrive twice (retries): process each id once.
    print(headers["webhook-id"], event["type"], event["data"]["status"])
    return 204
`;
}

export function nodeSnippet(url) {
  return `// npm install standardwebhooks
// Receives the webhooks of ${url}
import { Webhook } from "standardwebhooks";

const webhook = new Webhook(process.env.WEBHOOK_SECRET); // "whsec_..." for this endpoint

// rawBody: the exact request body as a string, before any JSON parsing.
export function handle(rawBody, headers) {
  let event;
  try {
    event = webhook.verify(rawBody, headers);
  } catch (error) {
    return 401; // not from us, changed on the way, or too old: drop it
  }
  // The same webhook-id may arrive twice (retries): process each id once.
  console.log(headers["webhook-id"], event.type, event.data.status);
  return 204;
}
`;
}
