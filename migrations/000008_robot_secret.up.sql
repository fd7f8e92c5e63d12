-- DingTalk's and Feishu's custom robots can require their own signature ("加签" / "签名校验"):
-- the robot's secret, given by the chat service, is kept with the webhook to sign each message.
ALTER TABLE webhooks ADD COLUMN robot_secret text NOT NULL DEFAULT '' CHECK (length(robot_secret) <= 255);
