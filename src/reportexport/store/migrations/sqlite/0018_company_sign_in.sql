-- Company sign-in (OpenID Connect): a person made by the identity provider is known by the
-- provider's subject (`sub`), with the e-mail address it gave; a dashboard session started
-- through the provider keeps the provider's refresh token and when the provider was last
-- asked, so an open session is checked again (and ends when the provider refuses).

ALTER TABLE users ADD COLUMN provider_subject TEXT;
ALTER TABLE users ADD COLUMN email TEXT;
CREATE UNIQUE INDEX users_provider_subject ON users (provider_subject);

ALTER TABLE dashboard_sessions ADD COLUMN provider_refresh TEXT;
ALTER TABLE dashboard_sessions ADD COLUMN provider_checked_at TEXT;
