package review

import (
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
)

// GroupName and Version are the API group and version of the reviews.
const (
	GroupName = "authentication.k8s.io"
	Version   = "v1"
)

// TokenReview asks whether a token is valid, for which audiences.
type TokenReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            TokenReviewSpec   `json:"spec" protobuf:"2"`
	Status          TokenReviewStatus `json:"status,omitempty"`
}

// TokenReviewSpec is the token and the audiences it is meant for (empty:
// the server's own).
type TokenReviewSpec struct {
	Token     string   `json:"token,omitempty" protobuf:"1"`
	Audiences []string `json:"audiences,omitempty" protobuf:"2"`
}

// TokenReviewStatus is the answer.
type TokenReviewStatus struct {
	Authenticated bool     `json:"authenticated,omitempty"`
	User          UserInfo `json:"user,omitempty"`
	Audiences     []string `json:"audiences,omitempty"`
	Error         string   `json:"error,omitempty"`
}

// UserInfo is a user, as the authentication API writes it.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// SelfSubjectReview reports who the caller is.
type SelfSubjectReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Status          SelfSubjectReviewStatus `json:"status,omitempty"`
}

// SelfSubjectReviewStatus holds the caller's user.
type SelfSubjectReviewStatus struct {
	UserInfo UserInfo `json:"userInfo,omitempty"`
}

// UserInfoFor converts an authenticated user.
func UserInfoFor(u authn.User) UserInfo {
	return UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// User converts back.
func (u UserInfo) User() authn.User {
	return authn.User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}
