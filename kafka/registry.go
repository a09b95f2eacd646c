package kafka

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Registry maps API keys to handlers and their supported version ranges.
// ApiVersions answers from it, so what is registered is what is advertised.
//
// Register is safe to call concurrently with serving, but handlers are
// normally registered before Server.Serve. Lookups on the request path take
// no lock: they read an immutable snapshot.
type Registry struct {
	mu   sync.Mutex // serialises Register
	snap atomic.Pointer[registrySnapshot]
	// identity is the cluster and node ApiVersions v5 checks a client's
	// expectation against (SetIdentity); nil: not checked.
	identity atomic.Pointer[Identity]
}

// Identity is the cluster and node a listener answers for: what a client
// that learned the node from metadata names in ApiVersions v5 (KIP-1242).
type Identity struct {
	ClusterID string
	NodeID    int32
}

// SetIdentity has ApiVersions v5 answer REBOOTSTRAP_REQUIRED to a client
// that expects another cluster or node than id. Safe to call while serving.
func (r *Registry) SetIdentity(id Identity) { r.identity.Store(&id) }

// registrySnapshot is immutable once published.
type registrySnapshot struct {
	byKey    []registration // indexed by key; h == nil when unregistered
	keys     []kmsg.ApiVersionsResponseApiKey
	features []Feature
	// finalized are the cluster's finalized levels (SetFinalized), over
	// the features' own; epoch is FinalizedFeaturesEpoch.
	finalized map[string]int16
	epoch     int64
}

// Feature is a feature flag ApiVersions v3+ advertises (KIP-584): the range
// of levels this node supports and the level finalized for the cluster (0:
// not finalized, left out of FinalizedFeatures as Kafka does). Clients
// choose protocol behaviour from the finalized level, such as
// transaction.version 2 for transactions v2 (KIP-890 part 2).
type Feature struct {
	Name               string
	MinLevel, MaxLevel int16
	Finalized          int16
}

type registration struct {
	min, max int16
	h        Handler
}

// NewRegistry returns a registry with ApiVersions (key 18, v0-v5) registered.
func NewRegistry() *Registry {
	r := &Registry{}
	r.snap.Store(&registrySnapshot{})
	r.Register(kmsg.ApiVersions, 0, apiVersionsMaxVersion, r.handleApiVersions)
	return r
}

// Register serves key at versions minVersion..maxVersion with h. Name the
// key (kmsg.Produce), and say in a block at the top of the handler's file
// which versions it serves and how each behaves; docs/node.md lists them, and
// a test checks that the three agree.
//
// It panics, as a broken program invariant, when key is unknown to kmsg, the
// range is empty, negative or beyond what kmsg can decode, h is nil, or key
// is already registered.
func (r *Registry) Register(api kmsg.Key, minVersion, maxVersion int16, h Handler) {
	key := api.Int16()
	proto := kmsg.RequestForKey(key)
	switch {
	case proto == nil:
		panic(fmt.Sprintf("kafka: Register: unknown API key %d", key))
	case h == nil:
		panic(fmt.Sprintf("kafka: Register: nil handler for %s", kmsg.NameForKey(key)))
	case minVersion < 0 || maxVersion < minVersion || maxVersion > proto.MaxVersion():
		panic(fmt.Sprintf("kafka: Register: %s: invalid versions %d-%d (kmsg decodes up to %d)",
			kmsg.NameForKey(key), minVersion, maxVersion, proto.MaxVersion()))
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	if int(key) < len(old.byKey) && old.byKey[key].h != nil {
		panic(fmt.Sprintf("kafka: Register: %s registered twice", kmsg.NameForKey(key)))
	}
	byKey := make([]registration, max(len(old.byKey), int(key)+1))
	copy(byKey, old.byKey)
	byKey[key] = registration{min: minVersion, max: maxVersion, h: h}

	var keys []kmsg.ApiVersionsResponseApiKey
	for k, reg := range byKey {
		if reg.h == nil {
			continue
		}
		e := kmsg.NewApiVersionsResponseApiKey()
		e.ApiKey, e.MinVersion, e.MaxVersion = int16(k), reg.min, reg.max
		keys = append(keys, e)
	}
	r.snap.Store(&registrySnapshot{byKey: byKey, keys: keys, features: old.features, finalized: old.finalized, epoch: old.epoch})
}

// SetFeature advertises f in ApiVersions v3+, replacing a feature of the
// same name. It panics, as a broken program invariant, when the finalized
// level is outside 0 and MinLevel..MaxLevel.
func (r *Registry) SetFeature(f Feature) {
	if f.MinLevel < 0 || f.MaxLevel < f.MinLevel || f.Finalized < 0 || f.Finalized > f.MaxLevel ||
		(f.Finalized > 0 && f.Finalized < f.MinLevel) {
		panic(fmt.Sprintf("kafka: SetFeature: %s: finalized level %d outside %d-%d", f.Name, f.Finalized, f.MinLevel, f.MaxLevel))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	features := make([]Feature, 0, len(old.features)+1)
	for _, o := range old.features {
		if o.Name != f.Name {
			features = append(features, o)
		}
	}
	features = append(features, f)
	r.snap.Store(&registrySnapshot{byKey: old.byKey, keys: old.keys, features: features, finalized: old.finalized, epoch: old.epoch})
}

// SetFinalized sets the cluster's finalized feature levels (UpdateFeatures,
// KIP-584), which replace the Finalized level of each feature they name,
// and the FinalizedFeaturesEpoch ApiVersions answers (epoch >= 1). A level
// outside a feature's supported range is ignored (another node wrote it),
// as are names of features not advertised.
func (r *Registry) SetFinalized(levels map[string]int16, epoch int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	r.snap.Store(&registrySnapshot{byKey: old.byKey, keys: old.keys, features: old.features, finalized: maps.Clone(levels), epoch: max(epoch, 1)})
}

// Features returns the advertised features, each at its finalized level
// (SetFinalized's, else its own), and FinalizedFeaturesEpoch. The caller
// owns the slice.
func (r *Registry) Features() ([]Feature, int64) {
	s := r.snap.Load()
	out := make([]Feature, len(s.features))
	for i, f := range s.features {
		if l, ok := s.finalized[f.Name]; ok && (l == 0 || l >= f.MinLevel && l <= f.MaxLevel) {
			f.Finalized = l
		}
		out[i] = f
	}
	return out, max(s.epoch, 1)
}

// lookup returns the registration of key, and false when key is not
// registered.
func (r *Registry) lookup(key int16) (registration, bool) {
	s := r.snap.Load()
	if key < 0 || int(key) >= len(s.byKey) || s.byKey[key].h == nil {
		return registration{}, false
	}
	return s.byKey[key], true
}

// apiKeys returns the registered ranges sorted by key. The caller must not
// modify the returned slice.
func (r *Registry) apiKeys() []kmsg.ApiVersionsResponseApiKey {
	return r.snap.Load().keys
}
