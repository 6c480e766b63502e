// Package rowkeys prints the TiKV row keys that tests/test_row_key.py expects, made by TiDB's own code.
//
// Each value is cast to its column's type as an INSERT casts it (Datum.ConvertTo), then encoded as TiDB
// encodes a row's handle (pkg/table/tables/tables.go, AddRecord): an int handle, or codec.EncodeKey of the
// primary key's values (new collations on) as a common handle; tablecodec.EncodeRowKeyWithHandle makes the
// key of table 114. It runs inside the TiCDC tree the goldens' generator runs in (see ../README.md):
//
//	mkdir -p "$TICDC/cmd/rowkeys" && cp tests/golden/ticdc/generator/row_keys_test.go "$TICDC/cmd/rowkeys/"
//	(cd "$TICDC" && go test -tags=intest -count=1 -v -run TestRowKeys ./cmd/rowkeys) | grep '^KEY'
package rowkeys

import (
	"encoding/hex"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/pingcap/tidb/pkg/kv"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/tablecodec"
	"github.com/pingcap/tidb/pkg/types"
	"github.com/pingcap/tidb/pkg/util/codec"
	"github.com/pingcap/tidb/pkg/util/collate"
)

const tableID = 114

// column is a column's type and a value of it, before the cast.
type column struct {
	tp    *types.FieldType
	value types.Datum
}

func fieldType(tp byte, flen, decimal int, charset string, flag uint, elems ...string) *types.FieldType {
	ft := types.NewFieldType(tp)
	ft.SetFlen(flen)
	ft.SetDecimal(decimal)
	ft.SetCharset(charset)
	ft.SetCollate(map[string]string{"binary": "binary", "utf8mb4": "utf8mb4_bin"}[charset])
	ft.SetFlag(flag)
	if len(elems) > 0 {
		ft.SetElems(elems)
	}
	return ft
}

func commonHandleKey(t *testing.T, columns ...column) string {
	var datums []types.Datum
	for _, c := range columns {
		d, err := c.value.ConvertTo(types.DefaultStmtNoWarningContext, c.tp)
		if err != nil {
			t.Fatalf("cast %v: %v", c.value, err)
		}
		datums = append(datums, d)
	}
	encoded, err := codec.EncodeKey(time.UTC, nil, datums...)
	if err != nil {
		t.Fatal(err)
	}
	handle, err := kv.NewCommonHandle(encoded)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(tablecodec.EncodeRowKeyWithHandle(tableID, handle))
}

func TestRowKeys(t *testing.T) {
	collate.SetNewCollationEnabledForTest(true)
	for _, v := range []int64{1, -1, 0, math.MinInt64, math.MaxInt64} {
		fmt.Printf("KEY int handle %d: %s\n", v, hex.EncodeToString(tablecodec.EncodeRowKeyWithHandle(tableID, kv.IntHandle(v))))
	}
	unsigned := types.NewUintDatum(math.MaxUint64)
	fmt.Printf("KEY int handle uint64 max: %s\n", hex.EncodeToString(tablecodec.EncodeRowKeyWithHandle(tableID, kv.IntHandle(unsigned.GetInt64()))))
	fmt.Printf("KEY int handle 7 of table 2^40+3: %s\n", hex.EncodeToString(tablecodec.EncodeRowKeyWithHandle(1<<40+3, kv.IntHandle(7))))

	text := func(n int) *types.FieldType { return fieldType(mysql.TypeVarchar, n, 0, "utf8mb4", 0) }
	decimal := func(p, s int) *types.FieldType { return fieldType(mysql.TypeNewDecimal, p, s, "binary", 0) }
	float := func(tp byte, flen int) *types.FieldType {
		return fieldType(tp, flen, types.UnspecifiedLength, "binary", 0)
	}
	str := types.NewStringDatum
	cases := []struct {
		name    string
		columns []column
	}{
		{"INT 3, VARCHAR(10) 'z'", []column{{fieldType(mysql.TypeLong, 11, 0, "binary", 0), types.NewIntDatum(3)}, {text(10), str("z")}}},
		{"INT -2, VARCHAR(10) 'k'", []column{{fieldType(mysql.TypeLong, 11, 0, "binary", 0), types.NewIntDatum(-2)}, {text(10), str("k")}}},
		{"BIGINT UNSIGNED max, VARCHAR(10) 'k'", []column{{fieldType(mysql.TypeLonglong, 20, 0, "binary", mysql.UnsignedFlag), types.NewUintDatum(math.MaxUint64)}, {text(10), str("k")}}},
		{"VARCHAR(10) 'ab  '", []column{{text(10), str("ab  ")}}},
		{"VARCHAR(10) ''", []column{{text(10), str("")}}},
		{"VARCHAR(10) 'abcdefgh'", []column{{text(10), str("abcdefgh")}}},
		{"VARCHAR(20) 'abcdefghij'", []column{{text(20), str("abcdefghij")}}},
		{"VARCHAR(20) 'héllo wörld!'", []column{{text(20), str("héllo wörld!")}}},
		{"CHAR(5) 'ab'", []column{{fieldType(mysql.TypeString, 5, 0, "utf8mb4", 0), str("ab")}}},
		{"VARBINARY(10) 'ab  '", []column{{fieldType(mysql.TypeVarchar, 10, 0, "binary", mysql.BinaryFlag), str("ab  ")}}},
		{"BINARY(4) 'ab'", []column{{fieldType(mysql.TypeString, 4, 0, "binary", mysql.BinaryFlag), str("ab")}}},
		{"DECIMAL(12,3) 1234.567", []column{{decimal(12, 3), str("1234.567")}}},
		{"DECIMAL(12,3) -0.001", []column{{decimal(12, 3), str("-0.001")}}},
		{"DECIMAL(12,3) 0", []column{{decimal(12, 3), str("0")}}},
		{"DECIMAL(65,30) max", []column{{decimal(65, 30), str("99999999999999999999999999999999999.999999999999999999999999999999")}}},
		{"DECIMAL(65,30) -1.5", []column{{decimal(65, 30), str("-1.5")}}},
		{"DECIMAL(10,0) 42", []column{{decimal(10, 0), str("42")}}},
		{"DECIMAL(10,0) -42", []column{{decimal(10, 0), str("-42")}}},
		{"DECIMAL(20,10) 12345.6789", []column{{decimal(20, 10), str("12345.6789")}}},
		{"DECIMAL(20,0) 12345678901", []column{{decimal(20, 0), str("12345678901")}}},
		{"DECIMAL(20,2) -12345678901.5", []column{{decimal(20, 2), str("-12345678901.5")}}},
		{"DECIMAL(5,5) -0.12345", []column{{decimal(5, 5), str("-0.12345")}}},
		{"DATE 1000-01-01", []column{{fieldType(mysql.TypeDate, 10, 0, "binary", 0), str("1000-01-01")}}},
		{"DATE 9999-12-31", []column{{fieldType(mysql.TypeDate, 10, 0, "binary", 0), str("9999-12-31")}}},
		{"DATETIME 2024-02-29 12:34:56", []column{{fieldType(mysql.TypeDatetime, 19, 0, "binary", 0), str("2024-02-29 12:34:56")}}},
		{"DATETIME(6) 9999-12-31 23:59:59.999999", []column{{fieldType(mysql.TypeDatetime, 26, 6, "binary", 0), str("9999-12-31 23:59:59.999999")}}},
		{"TIMESTAMP 1970-01-01 00:00:01", []column{{fieldType(mysql.TypeTimestamp, 19, 0, "binary", 0), str("1970-01-01 00:00:01")}}},
		{"TIMESTAMP(3) 2038-01-19 03:14:07.999", []column{{fieldType(mysql.TypeTimestamp, 23, 3, "binary", 0), str("2038-01-19 03:14:07.999")}}},
		{"TIME -838:59:59", []column{{fieldType(mysql.TypeDuration, 10, 0, "binary", 0), str("-838:59:59")}}},
		{"TIME(6) 00:00:00.5", []column{{fieldType(mysql.TypeDuration, 17, 6, "binary", 0), str("00:00:00.5")}}},
		{"TIME(6) -12:34:56.000001", []column{{fieldType(mysql.TypeDuration, 17, 6, "binary", 0), str("-12:34:56.000001")}}},
		{"FLOAT 0.1", []column{{float(mysql.TypeFloat, 12), types.NewFloat64Datum(0.1)}}},
		{"FLOAT -1234.5", []column{{float(mysql.TypeFloat, 12), types.NewFloat64Datum(-1234.5)}}},
		{"DOUBLE 0.1", []column{{float(mysql.TypeDouble, 22), types.NewFloat64Datum(0.1)}}},
		{"DOUBLE -1.7976931348623157e308", []column{{float(mysql.TypeDouble, 22), types.NewFloat64Datum(-1.7976931348623157e308)}}},
		{"DOUBLE 0", []column{{float(mysql.TypeDouble, 22), types.NewFloat64Datum(0)}}},
		{"YEAR 2024", []column{{fieldType(mysql.TypeYear, 4, 0, "binary", mysql.UnsignedFlag|mysql.ZerofillFlag), types.NewIntDatum(2024)}}},
		{"ENUM('a','b','c') 'b'", []column{{fieldType(mysql.TypeEnum, 1, 0, "utf8mb4", 0, "a", "b", "c"), str("b")}}},
		{"SET('a','b','c') 'a,c'", []column{{fieldType(mysql.TypeSet, 5, 0, "utf8mb4", 0, "a", "b", "c"), str("a,c")}}},
		{"BIT(10) 5", []column{{fieldType(mysql.TypeBit, 10, 0, "binary", mysql.UnsignedFlag), types.NewUintDatum(5)}}},
		{"BIT(64) max", []column{{fieldType(mysql.TypeBit, 64, 0, "binary", mysql.UnsignedFlag), types.NewUintDatum(math.MaxUint64)}}},
	}
	for _, c := range cases {
		fmt.Printf("KEY %s: %s\n", c.name, commonHandleKey(t, c.columns...))
	}
}
