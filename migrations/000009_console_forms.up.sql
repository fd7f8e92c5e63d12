-- The console's form tokens: each rendered form carries a signed, single-use token;
-- the first POST with it claims its row here, so a reload, a resubmission or a double click does
-- nothing a second time and is sent to the page the first one showed (result_url). Rows outlive
-- their token (12 hours) by a margin and are then deleted by the claims themselves.
CREATE TABLE console_forms (
    id         text PRIMARY KEY,                     -- SHA-256 of the token's nonce
    result_url text NOT NULL DEFAULT '' CHECK (length(result_url) <= 2048),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_forms_created_idx ON console_forms (created_at);
