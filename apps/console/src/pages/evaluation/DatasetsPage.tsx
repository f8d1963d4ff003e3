import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Page, Time } from '../../components/ui';
import { describeError } from '../../lib/errors';

/**
 * The tenant's datasets (docs/adr/0063): each a named list of evaluation inputs. Create one here; its
 * page adds items and runs experiments on versions of an agent.
 */
export default function DatasetsPage() {
  const api = useApi();
  const queries = useQueryClient();
  const datasets = useQuery({
    queryKey: ['datasets'],
    queryFn: () => unwrap(api.GET('/v1/datasets', { params: { query: { limit: 200 } } })),
  });
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/v1/datasets', {
          body: { name: name.trim(), ...(description.trim() ? { description: description.trim() } : {}) },
        }),
      ),
    onSuccess: () => {
      setName('');
      setDescription('');
      return queries.invalidateQueries({ queryKey: ['datasets'] });
    },
  });
  return (
    <Page title="Datasets">
      <form
        className="form"
        aria-label="New dataset"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        {create.isError ? (
          <div className="error" role="alert" data-testid="form-error">
            <p>Not created: {describeError(create.error)}</p>
          </div>
        ) : null}
        <div className="field">
          <label htmlFor="dataset-name">Name</label>
          <input id="dataset-name" value={name} onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="dataset-description">Description</label>
          <input
            id="dataset-description"
            value={description}
            onChange={(e) => setDescription(e.target.value)}
          />
        </div>
        <div className="form-actions">
          <button type="submit" className="primary" disabled={!name.trim() || create.isPending}>
            Create dataset
          </button>
        </div>
      </form>
      {datasets.isPending ? (
        <Loading what="Loading datasets" />
      ) : datasets.isError ? (
        <ErrorBox error={datasets.error} />
      ) : datasets.data.data.length === 0 ? (
        <p className="empty">No datasets yet.</p>
      ) : (
        <div className="table-scroll">
          <table aria-label="Datasets">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Items</th>
                <th scope="col">Description</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {datasets.data.data.map((d) => (
                <tr key={d.id} data-testid={`dataset-${d.name}`}>
                  <td>
                    <Link to={`/datasets/${d.id}`}>{d.name}</Link>
                  </td>
                  <td>{d.itemCount}</td>
                  <td>{d.description ?? <span className="muted">—</span>}</td>
                  <td>
                    <Time at={d.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Page>
  );
}
