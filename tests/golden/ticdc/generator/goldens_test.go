// Package goldens writes the type-matrix goldens of tests/golden/ticdc with TiCDC's own encoders.
//
// It runs inside a checkout of pingcap/ticdc at b813e76f (see ../README.md): TiCDC's test helper
// creates each table of types.json in a mock TiDB, turns the rows into row events, and every
// protocol configuration of configs.json encodes them with codec.NewEventEncoder.
package goldens

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pingcap/ticdc/downstreamadapter/sink/columnselector"
	commonType "github.com/pingcap/ticdc/pkg/common"
	commonEvent "github.com/pingcap/ticdc/pkg/common/event"
	"github.com/pingcap/ticdc/pkg/config"
	"github.com/pingcap/ticdc/pkg/sink/codec"
	"github.com/pingcap/ticdc/pkg/sink/codec/common"
)

// Each table's events take the commit ts after this one, one after another.
const baseCommitTs = 450000000000000000

type typeCase struct {
	Name   string      `json:"name"`
	Type   string      `json:"type"`
	Values [][2]string `json:"values"` // SQL literal, the sink's input text
}

type protocolConfig struct {
	Name string `json:"name"`
	URI  string `json:"uri"` // a sink URI's query, without the registry
}

type message struct {
	Event string `json:"event"`
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
	// Text keeps a JSON protocol's bytes readable; base64 otherwise.
	Encoding string `json:"encoding,omitempty"`
}

type tableGolden struct {
	TableID       int64             `json:"table_id"`
	SchemaVersion uint64            `json:"schema_version"`
	Query         string            `json:"query"` // the CREATE TABLE as TiDB hands it to TiCDC
	DDL           *message          `json:"ddl,omitempty"`
	Bootstrap     *message          `json:"bootstrap,omitempty"`
	Messages      []message         `json:"messages"`
	Registered    map[string]string `json:"registered,omitempty"`
}

type event struct {
	name string
	row  *commonEvent.RowEvent
}

// goldensDir is tests/golden/ticdc of the sink's checkout: where the inputs are read and the goldens written.
func goldensDir(t *testing.T) string {
	dir := os.Getenv("TICDC_GOLDENS")
	if dir == "" {
		t.Fatal("set TICDC_GOLDENS to the sink's tests/golden/ticdc")
	}
	return dir
}

func readJSON(t *testing.T, name string, into any) {
	data, err := os.ReadFile(filepath.Join(goldensDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}

func TestGoldens(t *testing.T) {
	var cases []typeCase
	var configs []protocolConfig
	readJSON(t, "types.json", &cases)
	readJSON(t, "configs.json", &configs)

	helper := commonEvent.NewEventTestHelperWithTimeZone(t, time.UTC)
	defer helper.Close()
	helper.Tk().MustExec("use test")

	commitTs := uint64(baseCommitTs)
	next := func(dml *commonEvent.DMLEvent, name string) event {
		row, ok := dml.GetNextRow()
		if !ok {
			t.Fatalf("%s: no row", name)
		}
		commitTs++
		return event{name, &commonEvent.RowEvent{
			PhysicalTableID: dml.GetTableID(), TableInfo: dml.TableInfo, StartTs: commitTs - 1, CommitTs: commitTs,
			Event: row, ColumnSelector: columnselector.NewDefaultColumnSelector(),
		}}
	}
	tables := map[string]*commonType.TableInfo{}
	ddls := map[string]*commonEvent.DDLEvent{}
	events := map[string][]event{}
	for _, c := range cases {
		commitTs = baseCommitTs
		table := "t_" + c.Name
		ddl := helper.DDL2Event(fmt.Sprintf("CREATE TABLE test.%s (id INT PRIMARY KEY, v %s)", table, c.Type))
		ddl.FinishedTs = baseCommitTs // the DDL commits before the table's rows
		tables[c.Name], ddls[c.Name] = ddl.TableInfo, ddl
		insert := func(id int, literal string) string {
			return fmt.Sprintf("INSERT INTO test.%s VALUES (%d, %s)", table, id, literal)
		}
		for i, v := range append(c.Values, [2]string{"NULL", ""}) {
			events[c.Name] = append(events[c.Name],
				next(helper.DML2Event("test", table, insert(i+1, v[0])), fmt.Sprintf("insert %d", i+1)))
		}
		first, last := c.Values[0][0], c.Values[len(c.Values)-1][0]
		update, _ := helper.DML2UpdateEvent("test", table, insert(100, first),
			fmt.Sprintf("UPDATE test.%s SET v = %s WHERE id = 100", table, last))
		events[c.Name] = append(events[c.Name], next(update, "update 100"))
		events[c.Name] = append(events[c.Name], next(helper.DML2DeleteEvent("test", table, insert(101, last),
			fmt.Sprintf("DELETE FROM test.%s WHERE id = 101", table)), "delete 101"))
	}

	registry := newRegistry()
	defer registry.server.Close()
	for _, pc := range configs {
		out := map[string]*tableGolden{}
		for _, c := range cases {
			registry.reset()
			out[c.Name] = encodeTable(t, pc, registry, "tidb_test_t_"+c.Name, ddls[c.Name], events[c.Name])
		}
		data, err := json.MarshalIndent(map[string]any{"uri": pc.URI, "watermark": encodeWatermark(t, pc, registry),
			"tables": out}, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(goldensDir(t), pc.Name+".json"), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newEncoder is TiCDC's encoder of a configuration, as its Kafka sink makes it for topic.
func newEncoder(t *testing.T, pc protocolConfig, registry *registry, topic string) (common.EventEncoder, *common.Config) {
	uri, err := url.Parse("kafka://127.0.0.1:9092/" + topic + "?" + strings.ReplaceAll(pc.URI, "{registry}", registry.server.URL))
	if err != nil {
		t.Fatal(err)
	}
	protocol, err := config.ParseSinkProtocolFromString(uri.Query().Get("protocol"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := common.NewConfig(protocol)
	cfg.TimeZone = time.UTC
	// The changefeed's keyspace names Avro's records (the sink's avro-namespace default).
	cfg = cfg.WithChangefeedID(commonType.NewChangeFeedIDWithName("goldens", commonType.DefaultKeyspaceName))
	if err := cfg.Apply(uri, config.GetDefaultReplicaConfig().Sink); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	encoder, err := codec.NewEventEncoder(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return encoder, cfg
}

// encodeWatermark is a configuration's checkpoint (resolved ts) event at the ts after every table's rows, or nil
// where the protocol sends none.
func encodeWatermark(t *testing.T, pc protocolConfig, registry *registry) *message {
	encoder, _ := newEncoder(t, pc, registry, "tidb_test_watermark")
	m, err := encoder.EncodeCheckpointEvent(baseCommitTs + 100)
	if err != nil {
		t.Fatal(err)
	}
	if m == nil {
		return nil
	}
	return asMessage("watermark", m)
}

// encodeTable encodes a table's CREATE TABLE and row events as TiCDC's Kafka sink sends them to topic (the
// sink's tidb_{schema}_{table}).
func encodeTable(t *testing.T, pc protocolConfig, registry *registry, topic string, ddl *commonEvent.DDLEvent,
	events []event) *tableGolden {
	ctx := context.Background()
	encoder, cfg := newEncoder(t, pc, registry, topic)
	protocol, table := cfg.Protocol, ddl.TableInfo
	golden := &tableGolden{TableID: table.TableName.TableID, SchemaVersion: table.GetUpdateTS(), Query: ddl.Query}
	if m, err := encoder.EncodeDDLEvent(ddl); err != nil {
		t.Fatal(err)
	} else if m != nil {
		golden.DDL = asMessage("create table", m)
	}
	if protocol == config.ProtocolSimple {
		m, err := encoder.EncodeDDLEvent(codec.NewBootstrapDDLEvent(table))
		if err != nil {
			t.Fatal(err)
		}
		golden.Bootstrap = asMessage("bootstrap", m)
	}
	for _, e := range events {
		var built []*common.Message
		for attempt := 0; ; attempt++ {
			if err := encoder.AppendRowChangedEvent(ctx, topic, e.row); err != nil {
				// A value the protocol refuses (debezium-avro's BIGINT UNSIGNED over 2^63-1 as a long): the
				// sink must refuse it too.
				golden.Messages = append(golden.Messages, message{Event: e.name, Error: err.Error()})
				break
			}
			built = encoder.Build()
			// Simple's Avro maps and Canal-JSON's mysqlType follow Go's map order, for a two-column table a
			// rotation of the columns' order: encode again until it is the columns' order, which the sink writes.
			if inColumnOrder(cfg, built[0].Value) {
				break
			}
			if attempt == 100 {
				t.Fatalf("%s %s: Go's map order never came out in name order", pc.Name, e.name)
			}
		}
		if built == nil {
			continue
		}
		if len(built) != 1 {
			t.Fatalf("%s %s: %d messages", pc.Name, e.name, len(built))
		}
		golden.Messages = append(golden.Messages, *asMessage(e.name, built[0]))
	}
	if len(registry.subjects) > 0 {
		golden.Registered = registry.snapshot()
	}
	return golden
}

// inColumnOrder says whether the Go maps of a message list “id“ before “v“.
func inColumnOrder(cfg *common.Config, value []byte) bool {
	switch {
	case cfg.Protocol == config.ProtocolSimple && cfg.EncodingFormat == common.EncodingFormatAvro:
		return simpleAvroInColumnOrder(value)
	case cfg.Protocol == config.ProtocolCanalJSON:
		return !bytes.Contains(value, []byte(`"mysqlType":{"v"`))
	}
	return true
}

// simpleAvroInColumnOrder says whether every map of a Simple Avro row lists “id“ before “v“: each key “id“
// (with its value's long branch) comes before the next key “v“.
func simpleAvroInColumnOrder(value []byte) bool {
	id, v := []byte("\x04id\x02"), []byte("\x02v")
	for rest := value; ; {
		i, j := bytes.Index(rest, id), bytes.Index(rest, v)
		if i < 0 || j < 0 {
			return i < 0 && j < 0
		}
		if j < i {
			return false
		}
		rest = rest[j+len(v):]
	}
}

// asMessage keeps a message as text where it is UTF-8 (the JSON protocols), else as base64 (Avro, and Open
// Protocol's length-framed batches).
func asMessage(name string, m *common.Message) *message {
	if !utf8.Valid(m.Key) || !utf8.Valid(m.Value) {
		return &message{Event: name, Key: base64.StdEncoding.EncodeToString(m.Key),
			Value: base64.StdEncoding.EncodeToString(m.Value), Encoding: "base64"}
	}
	return &message{Event: name, Key: string(m.Key), Value: string(m.Value), Encoding: "text"}
}

// registry is a Confluent Schema Registry as TiCDC's encoder uses it: a connectivity check and registration.
type registry struct {
	mu       sync.Mutex
	server   *httptest.Server
	subjects map[string]string
	ids      map[string]int
}

func newRegistry() *registry {
	r := &registry{}
	r.reset()
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && req.URL.Path == "/" {
			_, _ = io.WriteString(w, "{}")
			return
		}
		subject, ok := strings.CutSuffix(strings.TrimPrefix(req.URL.Path, "/subjects/"), "/versions")
		if req.Method != http.MethodPost || !ok {
			http.Error(w, "not supported by the goldens' registry", http.StatusNotFound)
			return
		}
		var body struct {
			Schema string `json:"schema"`
		}
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		id, known := r.ids[body.Schema]
		if !known {
			id = len(r.ids) + 1
			r.ids[body.Schema] = id
		}
		r.subjects[subject] = body.Schema
		_ = json.NewEncoder(w).Encode(map[string]int{"id": id})
	}))
	return r
}

func (r *registry) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subjects, r.ids = map[string]string{}, map[string]int{}
}

func (r *registry) snapshot() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.subjects))
	for name := range r.subjects {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]string, len(names))
	for _, name := range names {
		out[name] = r.subjects[name]
	}
	return out
}
