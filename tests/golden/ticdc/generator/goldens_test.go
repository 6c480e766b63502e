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
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	glueTypes "github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/pingcap/ticdc/downstreamadapter/sink/columnselector"
	commonType "github.com/pingcap/ticdc/pkg/common"
	commonEvent "github.com/pingcap/ticdc/pkg/common/event"
	"github.com/pingcap/ticdc/pkg/config"
	"github.com/pingcap/ticdc/pkg/filter"
	"github.com/pingcap/ticdc/pkg/integrity"
	"github.com/pingcap/ticdc/pkg/routing"
	"github.com/pingcap/ticdc/pkg/sink/codec"
	"github.com/pingcap/ticdc/pkg/sink/codec/common"
	"github.com/pingcap/ticdc/pkg/util"
	"github.com/pingcap/tidb/pkg/util/chunk"
)

// Each table's events take the commit ts after this one, one after another.
const baseCommitTs = 450000000000000000

// typeCase is a table of types.json: (id INT PRIMARY KEY, v <Type>) and its values.
type typeCase struct {
	Name   string      `json:"name"`
	Type   string      `json:"type"`
	Values [][2]string `json:"values"` // SQL literal, the sink's input text
}

// tableCase is a table and its rows, each cell a SQL literal (and, for the sink's test, its input). A type of
// types.json becomes one; shapes.json holds others (composite keys, unique keys, no key).
type tableCase struct {
	Name    string      `json:"name"`
	Columns [][2]string `json:"columns"` // name, type as CREATE TABLE writes it
	Keys    []string    `json:"keys"`    // PRIMARY KEY (...), UNIQUE KEY ... (...)
	// The sink's primary-key and unique-keys options: the same keys, as the sink names them.
	PrimaryKey string    `json:"primary_key"`
	UniqueKeys string    `json:"unique_keys"`
	Inserts    [][]cell  `json:"inserts"`
	Update     [2][]cell `json:"update"` // a row inserted, then updated to the second row
	Delete     []cell    `json:"delete"` // a row inserted, then deleted
}

type cell [2]*string // SQL literal, the sink's input (null for NULL)

func literal(c cell) string { return *c[0] }

// asTable is a type's table: an INSERT of each value and of NULL, an UPDATE of id 100 from the first value to
// the last, a DELETE of id 101 holding the last value.
func (c typeCase) asTable() tableCase {
	text := func(s string) *string { return &s }
	row := func(id string, v [2]string) []cell { return []cell{{text(id), text(id)}, {text(v[0]), text(v[1])}} }
	table := tableCase{Name: c.Name, Columns: [][2]string{{"id", "INT"}, {"v", c.Type}},
		Keys: []string{"PRIMARY KEY (id)"}, PrimaryKey: "id"}
	for i, v := range c.Values {
		table.Inserts = append(table.Inserts, row(fmt.Sprint(i+1), v))
	}
	null := fmt.Sprint(len(c.Values) + 1)
	table.Inserts = append(table.Inserts, []cell{{text(null), text(null)}, {text("NULL"), nil}})
	first, last := c.Values[0], c.Values[len(c.Values)-1]
	table.Update = [2][]cell{row("100", first), row("100", last)}
	table.Delete = row("101", last)
	return table
}

type protocolConfig struct {
	Name string `json:"name"`
	URI  string `json:"uri"` // a sink URI's query, without the registry
	// Changefeed is a changefeed file's TOML, for settings that only the file has ([sink.open], [sink.debezium],
	// [integrity]); the sink's test hands the same text to the sink as its changefeed-config.
	Changefeed string `json:"changefeed,omitempty"`
}

// sinkConfig is the configuration's [sink] settings: TiCDC's defaults, under its changefeed file's.
func (pc protocolConfig) sinkConfig(t *testing.T) *config.SinkConfig {
	replica := config.GetDefaultReplicaConfig()
	if _, err := toml.Decode(pc.Changefeed, replica); err != nil {
		t.Fatalf("%s: %v", pc.Name, err)
	}
	return replica.Sink
}

// wanted says whether to write a configuration's goldens: all, or those TICDC_GOLDENS_ONLY names (commas), so
// that adding a configuration leaves the others' files as they are.
func wanted(name string) bool {
	only := os.Getenv("TICDC_GOLDENS_ONLY")
	return only == "" || slices.Contains(strings.Split(only, ","), name)
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
	TableID       int64  `json:"table_id"`
	SchemaVersion uint64 `json:"schema_version"`
	Query         string `json:"query"` // the CREATE TABLE as TiDB hands it to TiCDC
	// RoutedQuery is the CREATE TABLE as table routing (target-schema, target-table) rewrote it, where it did.
	RoutedQuery string            `json:"routed_query,omitempty"`
	DDL         *message          `json:"ddl,omitempty"`
	Bootstrap   *message          `json:"bootstrap,omitempty"`
	Messages    []message         `json:"messages"`
	Registered  map[string]string `json:"registered,omitempty"`
	Glue        *glueGolden       `json:"glue,omitempty"`
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
	var types []typeCase
	var cases []tableCase
	var configs []protocolConfig
	readJSON(t, "types.json", &types)
	readJSON(t, "shapes.json", &cases)
	readJSON(t, "configs.json", &configs)
	for _, c := range types {
		cases = append(cases, c.asTable())
	}

	// TiDB writes each row with its checksum (tidb_enable_row_level_checksum, which a session reads when it is
	// made: the helper's session is told too), and the rows are mounted as a changefeed with [sink.integrity]
	// integrity-check-level = "correctness" mounts them: the events carry the checksums, which only the
	// encoders configured with integrity write.
	helper := commonEvent.NewEventTestHelperWithTimeZone(t, time.UTC)
	defer helper.Close()
	helper.Tk().MustExec("set global tidb_enable_row_level_checksum = 1")
	helper.Tk().Session().GetSessionVars().EnableRowLevelChecksum = true
	helper.Tk().MustExec("use test")
	rows := &rowMaker{helper: helper, mounter: commonEvent.NewMounter(time.UTC, &integrity.Config{
		IntegrityCheckLevel:   util.AddressOf(integrity.CheckLevelCorrectness),
		CorruptionHandleLevel: util.AddressOf(integrity.CorruptionHandleLevelError),
	})}

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
			Checksum: row.Checksum, // as TiCDC's Kafka sink hands it on (downstreamadapter/sink/helper)
		}}
	}
	ddls := map[string]*commonEvent.DDLEvent{}
	events := map[string][]event{}
	for _, c := range cases {
		commitTs = baseCommitTs
		table := "test.t_" + c.Name
		definitions := make([]string, 0, len(c.Columns)+len(c.Keys))
		for _, column := range c.Columns {
			definitions = append(definitions, column[0]+" "+column[1])
		}
		ddl := helper.DDL2Event(fmt.Sprintf("CREATE TABLE %s (%s)", table,
			strings.Join(append(definitions, c.Keys...), ", ")))
		ddl.FinishedTs = baseCommitTs // the DDL commits before the table's rows
		ddls[c.Name] = ddl
		insert := func(row []cell) string {
			literals := make([]string, len(row))
			for i, value := range row {
				literals[i] = literal(value)
			}
			return fmt.Sprintf("INSERT INTO %s VALUES (%s)", table, strings.Join(literals, ", "))
		}
		// A row by its key (a FLOAT equals no literal), or by all its values in a table without one.
		key := strings.Split(c.PrimaryKey, ",")
		if c.PrimaryKey == "" { // the first unique key, named "name(a,b)" or not
			first := strings.Split(c.UniqueKeys, ";")[0]
			if open := strings.Index(first, "("); open >= 0 {
				first = strings.TrimSuffix(first[open+1:], ")")
			}
			key = strings.Split(first, ",")
		}
		where := func(row []cell) string {
			var conditions []string
			for i, value := range row {
				if slices.Contains(key, c.Columns[i][0]) || key[0] == "" {
					conditions = append(conditions, fmt.Sprintf("%s <=> %s", c.Columns[i][0], literal(value)))
				}
			}
			return strings.Join(conditions, " AND ")
		}
		for i, row := range c.Inserts {
			events[c.Name] = append(events[c.Name],
				next(rows.insert(ddl, insert(row)), fmt.Sprintf("insert %d", i+1)))
		}
		assignments := make([]string, len(c.Columns))
		for i, value := range c.Update[1] {
			assignments[i] = fmt.Sprintf("%s = %s", c.Columns[i][0], literal(value))
		}
		update := rows.update(ddl, insert(c.Update[0]),
			fmt.Sprintf("UPDATE %s SET %s WHERE %s", table, strings.Join(assignments, ", "), where(c.Update[0])))
		events[c.Name] = append(events[c.Name], next(update, "update"))
		events[c.Name] = append(events[c.Name], next(rows.delete(ddl, insert(c.Delete),
			fmt.Sprintf("DELETE FROM %s WHERE %s", table, where(c.Delete))), "delete"))
	}

	registry := newRegistry()
	defer registry.server.Close()
	defer registry.closeGlue()
	for _, pc := range configs {
		if !wanted(pc.Name) {
			continue
		}
		registry.useGlue(t, pc.sinkConfig(t))
		out := map[string]*tableGolden{}
		for _, c := range cases {
			registry.reset()
			out[c.Name] = encodeTable(t, pc, registry, "tidb_test_t_"+c.Name, columnNames(c), ddls[c.Name],
				events[c.Name])
		}
		document := map[string]any{"uri": pc.URI, "watermark": encodeWatermark(t, pc, registry), "tables": out}
		if pc.Changefeed != "" {
			document["changefeed"] = pc.Changefeed
		}
		data, err := json.MarshalIndent(document, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(goldensDir(t), pc.Name+".json"), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// rowMaker runs DMLs in the mock TiDB and mounts their rows as the test helper's DML2Event, DML2UpdateEvent and
// DML2DeleteEvent do, but with a mounter that verifies and keeps each row's checksum, as TiCDC's does for a
// changefeed with integrity-check-level "correctness" (pkg/common/event/mounter.go).
type rowMaker struct {
	helper  *commonEvent.EventTestHelper
	mounter commonEvent.Mounter
}

func (r *rowMaker) event(ddl *commonEvent.DDLEvent, raw *commonType.RawKVEntry) *commonEvent.DMLEvent {
	table := ddl.TableInfo
	ts := table.GetUpdateTS()
	dml := commonEvent.NewDMLEvent(commonType.NewDispatcherID(), table.TableName.TableID, ts-1, ts+1, table)
	dml.SetRows(chunk.NewChunkWithCapacity(table.GetFieldSlice(), 1))
	if err := dml.AppendRow(raw, r.mounter.DecodeToChunk, nil, filter.DMLFilterContext{}); err != nil {
		panic(err)
	}
	return dml
}

func (r *rowMaker) rawKVs(ddl *commonEvent.DDLEvent, dmls ...string) []*commonType.RawKVEntry {
	return r.helper.DML2RawKv(ddl.TableInfo.TableName.TableID, ddl.TableInfo.GetUpdateTS(), dmls...)
}

func (r *rowMaker) insert(ddl *commonEvent.DDLEvent, dml string) *commonEvent.DMLEvent {
	return r.event(ddl, r.rawKVs(ddl, dml)[0])
}

// update is the row the first DML (an INSERT) writes, changed by the second (an UPDATE): one put with its old value.
func (r *rowMaker) update(ddl *commonEvent.DDLEvent, insert, update string) *commonEvent.DMLEvent {
	kvs := r.rawKVs(ddl, insert, update)
	return r.event(ddl, &commonType.RawKVEntry{
		OpType: commonType.OpTypePut, KeyLen: uint32(len(kvs[1].Key)), ValueLen: uint32(len(kvs[1].Value)),
		OldValueLen: uint32(len(kvs[0].Value)), Key: kvs[1].Key, Value: kvs[1].Value, OldValue: kvs[0].Value,
		StartTs: kvs[0].StartTs, CRTs: kvs[1].CRTs,
	})
}

// delete is the row the INSERT writes, deleted (the DELETE then removes it from the mock TiDB).
func (r *rowMaker) delete(ddl *commonEvent.DDLEvent, insert, deleteDML string) *commonEvent.DMLEvent {
	kv := r.rawKVs(ddl, insert)[0]
	dml := r.event(ddl, &commonType.RawKVEntry{
		OpType: commonType.OpTypeDelete, Key: kv.Key, OldValue: kv.Value, StartTs: kv.StartTs, CRTs: kv.CRTs,
	})
	r.helper.Tk().MustExec(deleteDML)
	return dml
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
	if err := cfg.Apply(uri, pc.sinkConfig(t)); err != nil {
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
func encodeTable(t *testing.T, pc protocolConfig, registry *registry, topic string, columns []string,
	ddl *commonEvent.DDLEvent, events []event) *tableGolden {
	ctx := context.Background()
	encoder, cfg := newEncoder(t, pc, registry, topic)
	golden := &tableGolden{TableID: ddl.TableInfo.TableName.TableID, SchemaVersion: ddl.TableInfo.GetUpdateTS(),
		Query: ddl.Query}
	// Table routing renames the table in what the encoder is handed, as TiCDC's event collector does; the topic
	// stays the source table's.
	router, err := routing.NewRouter(cfg.ChangefeedID, false, pc.sinkConfig(t).DispatchRules)
	if err != nil {
		t.Fatal(err)
	}
	if ddl, err = router.ApplyToDDLEvent(ddl); err != nil {
		t.Fatal(err)
	}
	if ddl.Query != golden.Query {
		golden.RoutedQuery = ddl.Query
	}
	protocol, table := cfg.Protocol, ddl.TableInfo
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
		routed := *e.row
		if routed.TableInfo, err = router.ApplyToTableInfo(e.row.TableInfo); err != nil {
			t.Fatal(err)
		}
		e.row = &routed
		var built []*common.Message
		for attempt := 0; ; attempt++ {
			if err := encoder.AppendRowChangedEvent(ctx, topic, e.row); err != nil {
				// A value the protocol refuses (debezium-avro's BIGINT UNSIGNED over 2^63-1 as a long): the
				// sink must refuse it too.
				golden.Messages = append(golden.Messages, message{Event: e.name, Error: err.Error()})
				break
			}
			built = encoder.Build()
			// Simple's Avro maps and Canal-JSON's mysqlType follow Go's map order, for a small table a rotation
			// of the columns' order: encode again until it is the columns' order, which the sink writes.
			if inColumnOrder(cfg, columns, built[0].Value) {
				break
			}
			if attempt == 2000 { // an UPDATE of 8 columns: two maps, each one rotation in 8
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
	if registry.glue != nil {
		golden.Registered, golden.Glue = registry.glue.snapshot()
	}
	return golden
}

func columnNames(c tableCase) []string {
	names := make([]string, len(c.Columns))
	for i, column := range c.Columns {
		names[i] = column[0]
	}
	return names
}

// inColumnOrder says whether the Go maps of a message list the columns in their order.
func inColumnOrder(cfg *common.Config, columns []string, value []byte) bool {
	switch {
	case cfg.Protocol == config.ProtocolSimple && cfg.EncodingFormat == common.EncodingFormatAvro:
		return avroMapsInColumnOrder(columns, value)
	case cfg.Protocol == config.ProtocolCanalJSON:
		// A rotation of the columns that starts with the first is their order.
		return !bytes.Contains(value, []byte(`"mysqlType":{`)) ||
			bytes.Contains(value, []byte(`"mysqlType":{"`+columns[0]+`"`))
	}
	return true
}

// avroMapsInColumnOrder says whether the Avro maps of a Simple row name the columns in their order: the keys
// (Avro strings: a zig-zag length, then the name) found in the message come as the columns, over and over. The
// shapes' column names are chosen to occur in no value.
func avroMapsInColumnOrder(columns []string, value []byte) bool {
	type found struct{ at, column int }
	var keys []found
	for i, name := range columns {
		key := append([]byte{byte(len(name) << 1)}, name...)
		for at := 0; ; {
			j := bytes.Index(value[at:], key)
			if j < 0 {
				break
			}
			keys = append(keys, found{at + j, i})
			at += j + len(key)
		}
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a].at < keys[b].at })
	for i, key := range keys {
		if key.column != i%len(columns) {
			return false
		}
	}
	return len(keys)%len(columns) == 0
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

// registry is a Confluent Schema Registry as TiCDC's encoder uses it: a connectivity check and registration; and,
// for a configuration with a Glue registry, the recorder of what TiCDC registers there.
type registry struct {
	mu       sync.Mutex
	server   *httptest.Server
	subjects map[string]string
	ids      map[string]int
	glue     *glueRecorder
	glueUsed *glueRecorder // made once, kept between the configurations that use Glue
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
	if r.glue != nil {
		r.glue.reset()
	}
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

// glueGolden is what TiCDC did in the Glue registry for a table: its requests in order (the operation, and the
// schema it names), and each schema it created, with the ids of the versions it was answered.
type glueGolden struct {
	Calls   []string               `json:"calls"`
	Schemas map[string]*glueSchema `json:"schemas"`
}

type glueSchema struct {
	DataFormat    string   `json:"data_format"`
	Compatibility string   `json:"compatibility"`
	VersionIDs    []string `json:"version_ids"`
}

// glueRecorder stands between TiCDC's Glue client and a Glue API (moto's server, at TICDC_GOLDENS_GLUE): it passes
// each request on and records it, as the Confluent registry above records subjects. aws-sdk-go-v2 reads
// AWS_ENDPOINT_URL_GLUE only where it loads the default configuration, which TiCDC does when its
// glue-schema-registry-config has no credentials: so the configurations give none, and the environment the
// recorder's endpoint, region and credentials.
type glueRecorder struct {
	mu          sync.Mutex
	server      *httptest.Server
	upstreamURL string
	upstream    *glue.Client
	config      *config.GlueSchemaRegistryConfig
	golden      *glueGolden
	definitions map[string]string // schema name -> its latest definition
}

// useGlue points TiCDC's Glue client at the recorder where the configuration has a Glue registry.
func (r *registry) useGlue(t *testing.T, sink *config.SinkConfig) {
	r.glue = nil
	if sink.KafkaConfig == nil || sink.KafkaConfig.GlueSchemaRegistryConfig == nil {
		return
	}
	cfg := sink.KafkaConfig.GlueSchemaRegistryConfig
	if r.glueUsed == nil {
		upstream := os.Getenv("TICDC_GOLDENS_GLUE")
		if upstream == "" {
			t.Fatal("set TICDC_GOLDENS_GLUE to a Glue API's URL (moto_server -p <port>) for the Glue configurations")
		}
		g := &glueRecorder{upstreamURL: strings.TrimRight(upstream, "/")}
		g.upstream = glue.New(glue.Options{Region: cfg.Region, BaseEndpoint: aws.String(g.upstreamURL),
			Credentials: credentials.NewStaticCredentialsProvider("goldens", "goldens", "")})
		g.server = httptest.NewServer(g)
		r.glueUsed = g
	}
	for name, value := range map[string]string{
		"AWS_ENDPOINT_URL_GLUE": r.glueUsed.server.URL, "AWS_REGION": cfg.Region,
		"AWS_ACCESS_KEY_ID": "goldens", "AWS_SECRET_ACCESS_KEY": "goldens", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		t.Setenv(name, value)
	}
	r.glue = r.glueUsed
	r.glue.config = cfg
}

func (r *registry) closeGlue() {
	if r.glueUsed != nil {
		r.glueUsed.server.Close()
	}
}

// reset makes the registry anew in the Glue API, without schemas, and forgets what was recorded.
func (g *glueRecorder) reset() {
	ctx := context.Background()
	id := &glueTypes.RegistryId{RegistryName: aws.String(g.config.RegistryName)}
	if _, err := g.upstream.DeleteRegistry(ctx, &glue.DeleteRegistryInput{RegistryId: id}); err != nil &&
		!strings.Contains(err.Error(), "EntityNotFoundException") {
		panic(err)
	}
	if _, err := g.upstream.CreateRegistry(ctx,
		&glue.CreateRegistryInput{RegistryName: aws.String(g.config.RegistryName)}); err != nil {
		panic(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.golden = &glueGolden{Calls: []string{}, Schemas: map[string]*glueSchema{}}
	g.definitions = map[string]string{}
}

// ServeHTTP passes a request of TiCDC's to the Glue API, and records it with the answer.
func (g *glueRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := http.NewRequest(req.Method, g.upstreamURL+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = req.Header.Clone()
	out.Header.Del("Accept-Encoding") // the answer is read here, so it comes plain
	resp, err := http.DefaultClient.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	g.record(strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "AWSGlue."), body, answer)
	for name, values := range resp.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

func (g *glueRecorder) record(operation string, request, answer []byte) {
	var asked struct {
		SchemaName       string
		SchemaId         struct{ SchemaName string }
		DataFormat       string
		Compatibility    string
		SchemaDefinition string
	}
	var answered struct{ SchemaVersionId string }
	_ = json.Unmarshal(request, &asked)
	_ = json.Unmarshal(answer, &answered)
	name := asked.SchemaName + asked.SchemaId.SchemaName
	g.mu.Lock()
	defer g.mu.Unlock()
	g.golden.Calls = append(g.golden.Calls, strings.TrimSpace(operation+" "+name))
	switch operation {
	case "CreateSchema":
		g.golden.Schemas[name] = &glueSchema{DataFormat: asked.DataFormat, Compatibility: asked.Compatibility}
	case "RegisterSchemaVersion":
	default:
		return
	}
	if answered.SchemaVersionId == "" {
		return // refused: the call shows it
	}
	g.definitions[name] = asked.SchemaDefinition
	if schema := g.golden.Schemas[name]; schema != nil &&
		!slices.Contains(schema.VersionIDs, answered.SchemaVersionId) {
		schema.VersionIDs = append(schema.VersionIDs, answered.SchemaVersionId)
	}
}

// snapshot is the schemas' latest definitions by name, and what was done to make them.
func (g *glueRecorder) snapshot() (map[string]string, *glueGolden) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.golden.Calls) == 0 {
		return nil, nil
	}
	return maps.Clone(g.definitions), g.golden
}
