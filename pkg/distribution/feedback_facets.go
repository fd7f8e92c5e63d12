package distribution

// FeedbackFacets are what an app's feedback can be filtered by in its inbox: the builds and the
// testers that have reports, each with how many.
type FeedbackFacets struct {
	Builds  []FeedbackBuild
	Testers []FeedbackTester
}

// FeedbackBuild is a build with reports, newest first.
type FeedbackBuild struct {
	ReleaseID                    int64
	ReleaseVersion, BuildVersion string
	ReleaseNumber                int
	ChannelName                  string
	Count                        int
}

// FeedbackTester is a tester with reports on an app.
type FeedbackTester struct {
	TesterID    int64
	Email, Name string
	Count       int
}
