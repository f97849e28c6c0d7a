-- 0018_webhook_delivery_problems: Telegram failing to deliver to our webhook is recorded like a
-- collector that refuses our credentials.
-- Why: in INGRESS=webhook the owner only compared the registered URL; when Telegram could not reach
-- the endpoint (a wrong WEBHOOK_PUBLIC_URL, a proxy or TLS problem, a firewall), every replica looked
-- ready while Telegram's backlog grew towards its 24-hour limit. The owner now records the condition
-- in relay.config_problems (component 'webhook', its bot) while getWebhookInfo reports recent errors
-- and a backlog that does not drain, so any admin replica reports it in /health/ready, and a new
-- episode raises one alert to the operators' chat (relay.config_problem_record). The owner deletes
-- the row once Telegram delivers again.
alter table relay.config_problems drop constraint if exists config_problems_component_check;
alter table relay.config_problems
  add constraint config_problems_component_check check (component in ('capture', 'outbound', 'webhook'));
