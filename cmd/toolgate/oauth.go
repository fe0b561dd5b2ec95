package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/adapters/oauth"
	"github.com/toolgate/toolgate/gateway"
)

// oauthOptions builds the HTTP transport's OAuth resource server from
// http.auth.oauth, or nil when it is off. A wrong issuer (its metadata
// missing, or naming another) is an error at start; one that cannot be
// reached yet is discovered in the background ([oauth.New]).
func (a *app) oauthOptions(ctx context.Context) (*gateway.OAuthOptions, error) {
	o := a.cfg.HTTP.Auth.OAuth
	if !o.Enabled() {
		return nil, nil
	}
	secret, err := a.cfg.IntrospectionSecret()
	if err != nil {
		return nil, usageError{err.Error()}
	}
	intro := oauth.Introspection{URL: o.IntrospectionURL, ClientID: o.IntrospectionClientID, ClientSecret: secret}
	v, err := oauth.New(ctx, oauth.Options{Issuer: o.Issuer, Audience: o.Audience, JWKSURL: o.JWKSURL, Logger: a.log, Introspection: intro})
	if err != nil {
		return nil, err
	}
	a.log.Info("OAuth resource server on", "issuer", o.Issuer, "audience", o.Audience)
	return &gateway.OAuthOptions{
		Verifier:       oauthVerifier{v, o.RecordClaims},
		RequiredScopes: o.RequiredScopes,
		Metadata:       oauth.ResourceMetadata(o.Audience, o.Issuer, o.ScopesSupported),
	}, nil
}

// oauthVerifier adapts the oauth package's verifier to the gateway's
// interface: the identity is the token's subject; records keep the
// claims of http.auth.oauth.record_claims.
type oauthVerifier struct {
	v        *oauth.Verifier
	recorded []string
}

func (o oauthVerifier) Verify(ctx context.Context, token string) (string, *gateway.Principal, error) {
	p, err := o.v.Verify(ctx, token)
	if errors.Is(err, oauth.ErrUnavailable) {
		return "", nil, fmt.Errorf("%w: %w", gateway.ErrAuthUnavailable, err) // 503, not 401
	}
	if err != nil {
		return "", nil, err
	}
	return "sub:" + p.Subject, &gateway.Principal{ClientID: p.ClientID, Scopes: p.Scopes, Claims: p.Claims, Recorded: o.recorded}, nil
}
