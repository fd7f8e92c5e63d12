-- How often Windows' App Installer checks a channel's .appinstaller file for an update when the
-- app starts (OnLaunch HoursBetweenUpdateChecks: 0 checks at every start; Windows' own default
-- is 24). Every existing channel starts at that default.
ALTER TABLE channels ADD COLUMN appinstaller_hours smallint NOT NULL DEFAULT 24
	CONSTRAINT channels_appinstaller_hours CHECK (appinstaller_hours BETWEEN 0 AND 255);
